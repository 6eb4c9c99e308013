package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/nats-io/nats.go"

	"tessera/measure/remote"
)

// natsFlags are the flags of the commands that talk to a NATS server: the
// URL and where the credentials are (files or the environment; never the
// command line itself).
type natsFlags struct {
	url   string
	files remote.AuthFiles
}

func (n *natsFlags) register(fs *flag.FlagSet, urlHelp string) {
	fs.StringVar(&n.url, "nats", "", urlHelp)
	fs.StringVar(&n.files.Password, "nats-password-file", "", "`FILE` with user:password on its first line (else $"+remote.EnvUser+" and $"+remote.EnvPassword+")")
	fs.StringVar(&n.files.NKey, "nats-nkey", "", "`FILE` with an NKey user seed (else $"+remote.EnvNKey+")")
	fs.StringVar(&n.files.Creds, "nats-creds", "", "JWT user credentials `FILE`")
	fs.StringVar(&n.files.CA, "nats-ca", "", "CA certificate `FILE` that verifies the server (turns TLS on)")
	fs.StringVar(&n.files.Cert, "nats-cert", "", "client certificate `FILE` (with --nats-key)")
	fs.StringVar(&n.files.Key, "nats-key", "", "client key `FILE` (with --nats-cert)")
}

// connect connects as name with the credentials the flags name.
func (n *natsFlags) connect(name string) (*nats.Conn, error) {
	auth, err := remote.LoadAuth(n.files, os.Getenv)
	if err != nil {
		return nil, err
	}
	nc, err := remote.Connect(n.url, auth, name)
	if err != nil {
		return nil, fmt.Errorf("--nats: %w", err)
	}
	return nc, nil
}
