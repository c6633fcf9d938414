package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The API's decoders are strict: what a client sends either means one
// thing or is refused with the field at fault. net/url's own parser drops
// a pair it cannot unescape without a word (so seed=%zz ran seed 0), and
// encoding/json lets the last of two equal keys win silently.

// maxJSONDepth bounds the nesting of a body; the API's deepest is 3
// (the object, "actions", an action).
const maxJSONDepth = 8

// parseQuery reads a query string strictly: every pair must unescape and
// be valid UTF-8, and no key may be given twice.
func parseQuery(raw string) (url.Values, *apiError) {
	q := url.Values{}
	for piece := range strings.SplitSeq(raw, "&") {
		if piece == "" {
			continue // "a=1&&b=2" and a trailing "&" carry nothing
		}
		k, v, _ := strings.Cut(piece, "=")
		key, err := url.QueryUnescape(k)
		if err != nil || !utf8.ValidString(key) {
			return nil, badRequest(clipKey(k), "parameter %q: malformed percent-encoding; escape %% as %%25", clip([]byte(k)))
		}
		if strings.Contains(piece, ";") {
			// Go's net/url refuses it too: some servers split on it and
			// some do not, so a query with one means two things.
			return nil, badRequest(clipKey(key), "parameter %q: a semicolon is not a separator; use & (or escape it as %%3B)", clip([]byte(key)))
		}
		val, err := url.QueryUnescape(v)
		if err != nil || !utf8.ValidString(val) {
			return nil, badRequest(clipKey(key), "%s %q: malformed percent-encoding; escape %% as %%25", clip([]byte(key)), clip([]byte(v)))
		}
		if _, dup := q[key]; dup {
			return nil, badRequest(clipKey(key), "%s given more than once", clip([]byte(key)))
		}
		q[key] = []string{val}
	}
	return q, nil
}

// clipKey is a client's key, shortened, as the "field" of an error.
func clipKey(k string) string {
	if r := []rune(k); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return k
}

// readBody reads a request's body within the size limit: the bytes
// readBodies has read already, or the body itself.
func readBody(r *http.Request, maxBody int64) ([]byte, *apiError) {
	if b, ok := r.Context().Value(bodyKey{}).([]byte); ok {
		if int64(len(b)) > maxBody {
			return nil, &apiError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("body over %d bytes", maxBody)}
		}
		return b, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, &apiError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("body over %d bytes", maxBody)}
		}
		return nil, badRequest("", "reading the body: %v", err)
	}
	return body, nil
}

// jsonHandler is the shape of the API's handlers of a JSON body: read it
// within maxBody, decode it, and only then act on what it says. A body too
// large answers 413 and one the decoder refuses 400 with the field at
// fault, before act runs, so that a refused request changes nothing.
func jsonHandler[T any](maxBody int64, decode func(body []byte) (T, *apiError), act func(w http.ResponseWriter, r *http.Request, v T)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, aerr := readBody(r, maxBody)
		if aerr != nil {
			aerr.write(w)
			return
		}
		v, aerr := decode(body)
		if aerr != nil {
			aerr.write(w)
			return
		}
		act(w, r, v)
	}
}

// decodeObject reads a JSON object whose keys are among allowed (all keys
// when allowed is nil), refusing malformed JSON, data after the object, a
// key given twice at any depth and nesting deeper than maxJSONDepth. example
// shows the expected shape in the error. Its fields are read with
// unmarshal or parseInt, which refuse null.
func decodeObject(body []byte, example string, allowed []string) (map[string]json.RawMessage, *apiError) {
	if err := checkJSON(body); err != nil {
		var d *duplicateKey
		if errors.As(err, &d) {
			return nil, badRequest(d.path, "key %q given more than once in %s", clip([]byte(d.key)), d.where())
		}
		return nil, badRequest("", "malformed JSON (%v): want an object like %s", err, example)
	}
	var f map[string]json.RawMessage
	if err := json.Unmarshal(body, &f); err != nil || f == nil {
		return nil, badRequest("", "malformed JSON: want an object like %s", example)
	}
	if allowed != nil {
		for key := range f {
			if !contains(allowed, key) {
				return nil, badRequest(clipKey(key), "unknown field %q: this endpoint takes %s", clip([]byte(key)), strings.Join(allowed, ", "))
			}
		}
	}
	return f, nil
}

// unmarshal is json.Unmarshal that refuses null: no field of the API
// takes it, and encoding/json reads it as "leave v as it is", so that
// "noise": null ran with noise and "profile": null the default profile.
// The caller's refusal names the field and what it takes.
func unmarshal(raw json.RawMessage, v any) error {
	if string(bytes.TrimSpace(raw)) == "null" {
		return errors.New("null")
	}
	return json.Unmarshal(raw, v)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// duplicateKey is a key that appears twice in one object.
type duplicateKey struct {
	path, key string // path of the object's member: actions[3].minute
}

func (d *duplicateKey) Error() string { return fmt.Sprintf("duplicate key %q at %s", d.key, d.path) }

func (d *duplicateKey) where() string {
	if parent, ok := strings.CutSuffix(d.path, "."+d.key); ok {
		return parent
	}
	return "the body"
}

// checkJSON walks one JSON value and reports the first key given twice in
// an object, nesting past maxJSONDepth, or anything after the value.
func checkJSON(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := walkJSON(dec, "", 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the value")
	}
	return nil
}

func walkJSON(dec *json.Decoder, path string, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return errors.New("empty body")
		}
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	if depth >= maxJSONDepth {
		return fmt.Errorf("nested deeper than %d levels", maxJSONDepth)
	}
	switch d {
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := tok.(string)
			member := key
			if path != "" {
				member = path + "." + key
			}
			if seen[key] {
				return &duplicateKey{path: member, key: key}
			}
			seen[key] = true
			if err := walkJSON(dec, member, depth+1); err != nil {
				return err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if err := walkJSON(dec, path+"["+strconv.Itoa(i)+"]", depth+1); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}
