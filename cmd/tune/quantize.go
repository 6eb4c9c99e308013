package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"

	"github.com/tessera-ml/tessera/internal/cli"
	"github.com/tessera-ml/tessera/quantize"
)

// quantizeUsage is the help of the command, before its flags.
const quantizeUsage = "usage: tune quantize model.onnx -o model.int8.onnx [--calibrate FILE.npy ...] [--method minmax|percentile] [--percentile P] [--reduce-range] [--input name=d0,d1,...]\n\n" +
	"Writes the static int8 QDQ model onnxruntime's quantize_static writes (QuantFormat.QDQ;\n" +
	"uint8 activations, int8 weights per channel, int32 biases): QuantizeLinear/DequantizeLinear\n" +
	"around Conv, Gemm, MatMul and the ops between them, with ranges calibrated by running\n" +
	"the float model on --calibrate's samples (one .npy per input, in input order or\n" +
	"name=FILE.npy; repeat for more samples), or on --random random inputs.\n\nflags:\n"

// quantizeFlags are the flags of `tune quantize`.
type quantizeFlags struct {
	inputs     cli.Shapes
	calibrate  cli.List
	out        string
	method     string
	percentile float64
	random     int
	seed       uint64
	threads    int
	reduce     bool
}

func (q *quantizeFlags) Register(fs *flag.FlagSet) {
	q.inputs = cli.Shapes{}
	fs.Var(q.inputs, "input", "bind graph input `name=d0,d1,...` to a static shape (repeatable)")
	fs.Var(&q.calibrate, "calibrate", "a calibration sample's input `FILE.npy` (or name=FILE.npy; .pb and raw float32 as tune run reads them; repeatable: bare files go to the inputs in order, a sample per round)")
	fs.StringVar(&q.out, "o", "", "write the quantized model to `FILE` (required; not the input)")
	fs.StringVar(&q.method, "method", "minmax", "calibration: minmax (min and max over the samples) or percentile (of |x|, onnxruntime's)")
	fs.Float64Var(&q.percentile, "percentile", quantize.DefaultPercentile, "the percentile of --method percentile, in [0, 100]")
	fs.IntVar(&q.random, "random", 8, "without --calibrate, calibrate on `N` random inputs (uniform in [-1, 1); integers 0 or 1)")
	fs.Uint64Var(&q.seed, "seed", 1, "seed of --random's inputs")
	fs.IntVar(&q.threads, "threads", runtime.NumCPU(), "threads of the calibration runs")
	fs.BoolVar(&q.reduce, "reduce-range", false, "weights to 7 bits ([-64, 64], onnxruntime's reduce_range): exact fast int8 kernels on CPUs without VNNI (AVX2's vpmaddubsw), at some accuracy")
	cli.SetUsage(fs, quantizeUsage)
}

// runQuantize is `tune quantize model.onnx -o out.onnx [flags]`
// (quantize.Load, quantize.Quantize, quantize.Write).
func runQuantize(args []string, stdout, stderr io.Writer) error {
	var qf quantizeFlags
	pos, err := cli.Parse(cli.NewFlagSet("tune quantize", stderr, &qf), args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || qf.out == "" {
		return cli.Usagef(stderr, "tune quantize: want one model file and -o FILE (run 'tune quantize -h')")
	}
	if quantize.SameFile(pos[0], qf.out) {
		return fmt.Errorf("-o %s is the input model: write the quantized model to another file", qf.out)
	}
	if qf.threads <= 0 || qf.random <= 0 {
		return errors.New("--threads and --random must be positive")
	}
	g, notes, err := quantize.Load(pos[0], qf.inputs.Dims())
	if err != nil {
		return err
	}
	cli.Notes(stderr, "tune quantize", notes)
	samples, err := quantize.ReadSamples(g, qf.calibrate)
	if err != nil {
		return fmt.Errorf("--calibrate: %w", err)
	}
	if samples == nil {
		fmt.Fprintf(stderr, "tune quantize: warning: no calibration data: ranges from %d random inputs; give --calibrate for a model you deploy\n", qf.random)
		if samples, err = quantize.RandomSamples(g, qf.random, qf.seed); err != nil {
			return err
		}
	}
	ctx, sigs := cli.NotifySignals()
	defer sigs.Stop()
	q, rep, err := quantize.Quantize(ctx, g, quantize.Options{
		Method: quantize.Method(qf.method), Percentile: qf.percentile, Samples: samples, Run: quantize.BuildRunner(qf.threads), ReduceRange: qf.reduce})
	if err != nil {
		return sigs.Interrupted(err, "stopped; nothing was written")
	}
	size, err := quantize.Write(qf.out, q)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "calibration: %s over %d samples\n", quantize.Method(qf.method).Describe(qf.percentile), rep.Samples)
	rep.WriteReport(stdout)
	fmt.Fprintf(stdout, "wrote %s (opset %d, %d nodes, %.1f MB)\n", cli.Printable(qf.out), q.Opset, len(q.Nodes), float64(size)/1e6)
	return nil
}
