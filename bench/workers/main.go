// Command workers measures tuning through `tune worker` over NATS JetStream
// against tuning on one machine, side by side in one run: the same `tune`
// command (same model, trials, seed) measured locally, through one worker,
// and through two, each worker pinned to a core of its own with taskset,
// each configuration with empty build caches and an empty database. It
// prints the wall time and trials per minute of each, and the ratios.
//
//	go run ./cmd/genmodels -o models resnet18
//	go run ./bench/workers -model models/resnet18.onnx -trials 256
//
// It needs the Debian package nats-server (started here with -js on
// 127.0.0.1 and a random port) and taskset. On a 2-core machine the tuner
// shares the cores with the workers, so two workers cannot compile twice
// as fast here; what the figures show is the engine's overhead per job
// (one worker against local) and how much of the compile time a second
// worker takes off the critical path.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tessera-ml/tessera/bench/internal/benchutil"
)

func main() {
	model := flag.String("model", "models/resnet18.onnx", "ONNX model to tune")
	trials := flag.Int("trials", 256, "trials of each tuning run")
	perRound := flag.Int("per-round", 64, "measurements per round")
	configs := flag.String("configs", "local,1,2", "configurations in order: local, or a number of workers")
	seed := flag.Int("seed", 1, "search seed")
	flag.Parse()
	if err := run(*model, *trials, *perRound, *seed, strings.Split(*configs, ",")); err != nil {
		benchutil.Fatal(err)
	}
}

type outcome struct {
	name   string
	wall   time.Duration
	trials int
}

func (o outcome) perMinute() float64 { return float64(o.trials) / o.wall.Minutes() }

func run(model string, trials, perRound, seed int, configs []string) error {
	for _, tool := range []string{"nats-server", "taskset"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found (apt-get install nats-server util-linux): %w", tool, err)
		}
	}
	if _, err := os.Stat(model); err != nil {
		return fmt.Errorf("%w (go run ./cmd/genmodels -o models resnet18)", err)
	}
	dir, err := os.MkdirTemp("", "tessera-bench-workers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "tune")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/tune").CombinedOutput(); err != nil {
		return fmt.Errorf("build tune: %v\n%s", err, out)
	}
	url, stop, err := startServer(dir)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Printf("workers: %s, %d trials, %d per round, seed %d, %d CPUs; nats-server on %s\n", model, trials, perRound, seed, runtime.NumCPU(), url)
	var outs []outcome
	for i, c := range configs {
		o, err := tuneWith(bin, url, model, filepath.Join(dir, fmt.Sprintf("run%d", i)), c, trials, perRound, seed)
		if err != nil {
			return fmt.Errorf("%s: %w", c, err)
		}
		fmt.Printf("%s wall s = %.1f\n%s trials per minute = %.2f\n", o.name, o.wall.Seconds(), o.name, o.perMinute())
		outs = append(outs, o)
	}
	for _, a := range outs {
		for _, b := range outs {
			if a.name != b.name && a.name > b.name {
				fmt.Printf("trials per minute %s / %s = %.3f\n", a.name, b.name, a.perMinute()/b.perMinute())
			}
		}
	}
	return nil
}

// startServer runs nats-server with JetStream on a free loopback port.
func startServer(dir string) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("nats-server", "-js", "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-sd", filepath.Join(dir, "js"))
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(100 * time.Millisecond) {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return url, func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }, nil
		}
	}
	cmd.Process.Kill()
	return "", nil, fmt.Errorf("nats-server did not listen on %d", port)
}

var trialsLine = regexp.MustCompile(`(?m)^(\d+) trials this run`)

// tuneWith runs one tuning with fresh caches: locally, or through n
// workers pinned to cores 0..n-1.
func tuneWith(bin, url, model, dir, config string, trials, perRound, seed int) (outcome, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return outcome{}, err
	}
	env := append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
	args := []string{model, "--trials", strconv.Itoa(trials), "--per-round", strconv.Itoa(perRound), "--threads", "1",
		"--seed", strconv.Itoa(seed), "--db", filepath.Join(dir, "t.db")}
	name := "local"
	if config != "local" {
		n, err := strconv.Atoi(config)
		if err != nil || n <= 0 {
			return outcome{}, fmt.Errorf("configuration %q: want local or a number of workers", config)
		}
		name = fmt.Sprintf("workers=%d", n)
		for i := range n {
			w := exec.Command("taskset", "-c", strconv.Itoa(i%runtime.NumCPU()), bin, "worker", "--nats", url, "--threads", "1", "--name", fmt.Sprintf("bench%d", i))
			w.Env = env
			logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("worker%d.log", i)))
			if err != nil {
				return outcome{}, err
			}
			defer logf.Close()
			w.Stdout, w.Stderr = logf, logf
			if err := w.Start(); err != nil {
				return outcome{}, err
			}
			defer func() { w.Process.Signal(syscall.SIGTERM); w.Wait() }()
		}
		args = append(args, "--nats", url)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return outcome{}, err
	}
	var out strings.Builder
	cmd.Stdout = &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return outcome{}, err
	}
	sc := bufio.NewScanner(stderr)
	var last string
	for sc.Scan() {
		last = sc.Text()
		fmt.Fprintf(os.Stderr, "%s: %s\n", name, last)
	}
	if err := cmd.Wait(); err != nil {
		return outcome{}, fmt.Errorf("tune: %v (last line: %s)\n%s", err, last, out.String())
	}
	wall := time.Since(start)
	fmt.Fprint(os.Stderr, out.String())
	m := trialsLine.FindStringSubmatch(out.String())
	if m == nil {
		return outcome{}, fmt.Errorf("no trial count in the output:\n%s", out.String())
	}
	n, _ := strconv.Atoi(m[1])
	return outcome{name: name, wall: wall, trials: n}, nil
}
