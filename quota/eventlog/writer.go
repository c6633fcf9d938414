package eventlog

import (
	"bufio"
	"io"
)

// Writer receives events: a JSON-lines writer (JSONWriter, File), the
// checker, or several (Tee).
type Writer interface {
	Write(e *Event)
}

// JSONWriter writes events as JSON lines, buffered; Flush at the end. It
// is not safe for concurrent use.
type JSONWriter struct {
	w   *bufio.Writer
	buf []byte
	err error
}

// NewJSONWriter writes the event log to w.
func NewJSONWriter(w io.Writer) *JSONWriter {
	return &JSONWriter{w: bufio.NewWriterSize(w, 1<<16)}
}

// Write implements Writer.
func (j *JSONWriter) Write(e *Event) {
	if j.err != nil {
		return
	}
	j.buf = e.AppendJSON(j.buf[:0])
	_, j.err = j.w.Write(j.buf)
}

// Flush writes what is buffered and reports the first error.
func (j *JSONWriter) Flush() error {
	if j.err != nil {
		return j.err
	}
	return j.w.Flush()
}

// Tee sends every event to each writer in turn.
type Tee []Writer

// Write implements Writer.
func (t Tee) Write(e *Event) {
	for _, w := range t {
		w.Write(e)
	}
}
