package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// OneLine makes a message one printable line: the lines of errors joined
// with newlines (errors.Join, a compiler's diagnostics) are joined with
// "; ", and what a terminal would interpret (escape sequences in a
// model's names) is escaped.
func OneLine(s string) string {
	var parts []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, Printable(l))
		}
	}
	return strings.Join(parts, "; ")
}

// Printable escapes control characters and invalid UTF-8 in s as Go
// escapes (\x1b, \u0085, \xff), leaving everything else as it is.
func Printable(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r == utf8.RuneError || unicode.IsControl(r) }) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case unicode.IsControl(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// PrintableLines applies Printable to every line of s, keeping the line
// breaks: a model's names reach the terminal escaped.
func PrintableLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Printable(l)
	}
	return strings.Join(lines, "\n")
}

// Notes writes notes to w, one printable line each: "prefix: note: ...".
func Notes(w io.Writer, prefix string, notes []string) {
	for _, n := range notes {
		fmt.Fprintf(w, "%s: note: %s\n", prefix, Printable(n))
	}
}

// WriteJSON writes v as one indented JSON document: the output of a
// command's --json, alone on stdout.
func WriteJSON(w io.Writer, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// Report is a command's report: it writes itself as text, and as JSON
// through its fields.
type Report interface{ Write(w io.Writer) error }

// WriteReport writes r as text (its Write) or, asJSON (a command's
// --json), as one JSON document (WriteJSON).
func WriteReport(w io.Writer, r Report, asJSON bool) error {
	if asJSON {
		return WriteJSON(w, r)
	}
	return r.Write(w)
}
