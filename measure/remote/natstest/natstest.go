// Package natstest starts an embedded NATS server with JetStream for tests,
// on 127.0.0.1 with a random port and a temporary store, configured by
// tessera.conf (the configuration the README shows): a tuner user, a
// worker user with a password and a worker with an NKey, the workers with
// the permissions of a worker only.
package natstest

import (
	_ "embed"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/tessera-ml/tessera/measure/remote"
)

//go:embed tessera.conf
var config []byte

// Server is a running test server and the credentials of its users.
type Server struct {
	URL                       string
	Tuner, Worker, NKeyWorker remote.Auth
	srv                       *server.Server
}

// Start starts a server that the test's cleanup shuts down.
func Start(t testing.TB) *Server {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	t.Setenv("TESSERA_TUNER_PASSWORD", "tuner-secret")
	t.Setenv("TESSERA_WORKER_PASSWORD", "worker-secret")
	t.Setenv("TESSERA_WORKER_NKEY", pub)
	dir := t.TempDir()
	path := filepath.Join(dir, "tessera.conf")
	if err := os.WriteFile(path, config, 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("natstest: tessera.conf: %v", err)
	}
	opts.Host, opts.Port = "127.0.0.1", -1
	opts.StoreDir = filepath.Join(dir, "js")
	opts.NoLog, opts.NoSigs = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("natstest: the server did not start")
	}
	t.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	return &Server{
		URL:        srv.ClientURL(),
		Tuner:      remote.Auth{User: "tuner", Password: "tuner-secret"},
		Worker:     remote.Auth{User: "worker", Password: "worker-secret"},
		NKeyWorker: remote.Auth{NKeySeed: string(seed)},
		srv:        srv,
	}
}
