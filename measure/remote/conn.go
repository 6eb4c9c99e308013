package remote

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// Auth is how a client proves who it is to the NATS server. Secrets come
// from files or the environment (LoadAuth), never from a command line.
type Auth struct {
	User, Password string
	NKeySeed       string // an NKey user seed ("SU...")
	CredsFile      string // a JWT user credentials file (decentralized auth)
	// TLS: CAFile verifies the server; CertFile and KeyFile are a client
	// certificate. A tls:// URL or CAFile turns TLS on.
	CAFile, CertFile, KeyFile string
}

// Environment variables LoadAuth reads.
const (
	EnvUser     = "TESSERA_NATS_USER"
	EnvPassword = "TESSERA_NATS_PASSWORD"
	EnvNKey     = "TESSERA_NATS_NKEY" // an NKey seed
)

// AuthFiles names the files credentials are read from; empty fields are
// not used.
type AuthFiles struct {
	Password      string // "user:password" on its first line
	NKey          string // an NKey user seed
	Creds         string // a JWT .creds file, passed to the client as is
	CA, Cert, Key string
}

// LoadAuth reads credentials from the files, else from the environment
// (getenv, usually os.Getenv): a user and password, or an NKey seed.
func LoadAuth(f AuthFiles, getenv func(string) string) (Auth, error) {
	a := Auth{CredsFile: f.Creds, CAFile: f.CA, CertFile: f.Cert, KeyFile: f.Key}
	if (f.Cert == "") != (f.Key == "") {
		return Auth{}, errors.New("remote: a client certificate needs both the certificate and the key file")
	}
	if f.Password != "" {
		data, err := os.ReadFile(f.Password)
		if err != nil {
			return Auth{}, fmt.Errorf("remote: password file: %w", err)
		}
		line, _, _ := strings.Cut(string(data), "\n")
		user, pass, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || user == "" || pass == "" {
			return Auth{}, fmt.Errorf("remote: password file %s: want user:password on its first line", f.Password)
		}
		a.User, a.Password = user, pass
	} else if u := getenv(EnvUser); u != "" {
		a.User, a.Password = u, getenv(EnvPassword)
		if a.Password == "" {
			return Auth{}, fmt.Errorf("remote: %s is set but %s is empty", EnvUser, EnvPassword)
		}
	}
	if f.NKey != "" {
		data, err := os.ReadFile(f.NKey)
		if err != nil {
			return Auth{}, fmt.Errorf("remote: NKey seed file: %w", err)
		}
		a.NKeySeed = strings.TrimSpace(string(data))
	} else if s := getenv(EnvNKey); s != "" {
		a.NKeySeed = strings.TrimSpace(s)
	}
	if a.NKeySeed != "" && a.User != "" {
		return Auth{}, errors.New("remote: give a user and password or an NKey, not both")
	}
	return a, nil
}

// Connect connects to the NATS server at rawURL as name, authenticating
// with a. A URL that carries a password is refused: secrets belong in a
// file or the environment.
func Connect(rawURL string, a Auth, name string) (*nats.Conn, error) {
	for _, one := range strings.Split(rawURL, ",") {
		u, err := url.Parse(strings.TrimSpace(one))
		if err != nil {
			return nil, fmt.Errorf("remote: NATS URL %q: %w", one, err)
		}
		if _, has := u.User.Password(); has {
			return nil, fmt.Errorf("remote: NATS URL %s carries a password: give it in a file or $%s instead", u.Redacted(), EnvPassword)
		}
	}
	opts := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		nats.Timeout(5 * time.Second),
	}
	if a.User != "" {
		opts = append(opts, nats.UserInfo(a.User, a.Password))
	}
	if a.NKeySeed != "" {
		kp, err := nkeys.FromSeed([]byte(a.NKeySeed))
		if err != nil {
			return nil, fmt.Errorf("remote: NKey seed: %w", err)
		}
		pub, err := kp.PublicKey()
		if err != nil {
			return nil, fmt.Errorf("remote: NKey seed: %w", err)
		}
		opts = append(opts, nats.Nkey(pub, kp.Sign))
	}
	if a.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(a.CredsFile))
	}
	if a.CAFile != "" {
		opts = append(opts, nats.RootCAs(a.CAFile))
	}
	if a.CertFile != "" {
		opts = append(opts, nats.ClientCert(a.CertFile, a.KeyFile))
	}
	nc, err := nats.Connect(rawURL, opts...)
	if err != nil {
		return nil, fmt.Errorf("remote: connect to %s: %w", rawURL, err)
	}
	return nc, nil
}
