package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Bar is a progress bar drawn on a terminal. The methods of a nil Bar do
// nothing.
type Bar struct {
	bar *progressbar.ProgressBar
	w   io.Writer
}

// NewBar returns a progress bar described as desc drawn on w, or nil
// where w is not a terminal.
func NewBar(w io.Writer, desc string) *Bar {
	file, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(file.Fd())) {
		return nil
	}
	return &Bar{progressbar.NewOptions(1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(200*time.Millisecond),
	), w}
}

// SetMax sets the count the bar fills at (at least 1).
func (b *Bar) SetMax(n int) {
	if b != nil {
		b.bar.ChangeMax(max(n, 1))
	}
}

// Set describes the bar as desc and moves it to n.
func (b *Bar) Set(desc string, n int) {
	if b != nil {
		b.bar.Describe(desc)
		b.bar.Set(n)
	}
}

// Finish fills the bar and ends its line.
func (b *Bar) Finish() {
	if b != nil {
		b.bar.Finish()
		fmt.Fprintln(b.w)
	}
}
