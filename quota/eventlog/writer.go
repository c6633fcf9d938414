package eventlog

import (
	"bufio"
	"encoding/json"
	"fmt"
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

// WriteLine writes v, a struct or a map that encodes as a JSON object, as
// one line with "ev" first, as the log's own lines are: the summary line
// afloat quota chaos prints after its log (Summary), and afloat quota
// check's result (ev "check"). It reports the first error of encoding or
// writing; a v that is not an object is an error.
func WriteLine(w io.Writer, ev string, v any) error {
	body, err := json.Marshal(v)
	if err == nil && body[0] != '{' {
		err = fmt.Errorf("%s, not an object", body[:min(len(body), 20)])
	}
	if err != nil {
		return fmt.Errorf("eventlog: the %s line: %w", ev, err)
	}
	line, _ := json.Marshal(map[string]string{"ev": ev})
	if len(body) > 2 { // an object with fields: join the two
		line = append(line[:len(line)-1], ',')
		line = append(line, body[1:]...)
	}
	_, err = w.Write(append(line, '\n'))
	return err
}
