package main

import (
	"strings"
	"testing"
)

// TestRedisQueryPasswordNotPrinted: a Redis URL with its password in the
// query (?password=…) is refused, and neither the refusal nor the usage
// shows the password, on any command that takes --redis.
func TestRedisQueryPasswordNotPrinted(t *testing.T) {
	const url = "redis://127.0.0.1:6379/?password=hunter2-in-query"
	for i, args := range [][]string{
		{"assign", "list", "--redis", url, "--pool", "p"},
		{"assign", "add", "--redis", url + "#frag-hunter2", "--pool", "p", "m"},
		{"assign", "bench", "--redis", url},
		{"proxy", "check", "--probe", "http://127.0.0.1:1", "--redis", url, "--pool", "p", "list.txt"},
		{"serve", "--addr", "127.0.0.1:0", "--redis", url},
	} {
		status, _, errOut := call(t, "", args...)
		if status != 2 || !strings.Contains(errOut, "query") {
			t.Errorf("step %d: afloat %v: status %d, stderr %q; want 2 and the query refused", i, args, status, errOut)
		}
		if strings.Contains(errOut, "hunter2") {
			t.Errorf("step %d: afloat %v: stderr %q shows the password", i, args, errOut)
		}
	}
}
