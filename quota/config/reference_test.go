package config

import (
	"fmt"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/etcdledger"
)

// referenceDoc is the configuration reference: a table row for every key
// of the file.
const referenceDoc = "../../docs/quota/config.md"

// keyRowRe is a row of the reference's tables that documents a key: its
// first cell is the key's path in backquotes (`tenants[].rate`). The
// other tables' rows begin with words ("lease duration") or a flag.
var keyRowRe = regexp.MustCompile("^\\| `([^`-][^`]*)` \\|")

// The columns of a key's row.
const (
	colType = iota + 1
	colDefault
	colRange
)

// keyPaths lists every key of the file that values of t decode from, under
// prefix, as the reference writes them: a section's keys joined by dots
// (etcd.max_txn_ops), a list of sections as list[] (tenants[].rate), a map
// of sections as map.<name> (regions.<name>.token). A section, a list and a
// map are keys themselves; a list or map of plain values is one key
// (tenants[].costs).
func keyPaths(t *testing.T, typ reflect.Type, prefix string) []string {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	var out []string
	switch typ.Kind() {
	case reflect.Struct:
		for i := range typ.NumField() {
			f := typ.Field(i)
			if strings.Contains(f.Tag.Get("yaml"), ",inline") {
				t.Fatalf("%s.%s is inline: teach keyPaths where its keys go", typ, f.Name)
			}
			key, ok := yamlKey(f)
			if !ok {
				continue
			}
			path := join(prefix, key)
			out = append(out, path)
			out = append(out, keyPaths(t, f.Type, path)...)
		}
	case reflect.Slice:
		out = append(out, keyPaths(t, typ.Elem(), prefix+"[]")...)
	case reflect.Map:
		out = append(out, keyPaths(t, typ.Elem(), prefix+".<name>")...)
	}
	return out
}

// referenceRows reads the reference's rows: each key's cells.
func referenceRows(t *testing.T) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile(referenceDoc)
	must(t, err)
	rows := map[string][]string{}
	for i, line := range strings.Split(string(raw), "\n") {
		m := keyRowRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if _, dup := rows[m[1]]; dup {
			t.Errorf("%s:%d: %s has a second row", referenceDoc, i+1, m[1])
		}
		cells := strings.Split(strings.TrimSpace(line), "|")
		cells = cells[1 : len(cells)-1] // outside the first and last bars
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		if len(cells) != 5 {
			t.Errorf("%s:%d: %s: %d cells: want key, type, default, range, what it does", referenceDoc, i+1, m[1], len(cells))
			continue
		}
		rows[m[1]] = cells
	}
	return rows
}

// referenceProblems compares the reference's rows with the keys the
// parser reads, both ways.
func referenceProblems(rows map[string][]string, keys []string) []string {
	var problems []string
	for _, k := range keys {
		if _, ok := rows[k]; !ok {
			problems = append(problems, fmt.Sprintf("%s: the parser reads it, and %s has no row for it", k, referenceDoc))
		}
	}
	for k := range rows {
		if !slices.Contains(keys, k) {
			problems = append(problems, fmt.Sprintf("%s: %s has a row for it, and the parser reads no such key", k, referenceDoc))
		}
	}
	slices.Sort(problems)
	return problems
}

// thousands writes n as the docs do: 10,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// TestReferenceListsEveryField: docs/quota/config.md has a row for every
// key the config file may hold — walked from Config's types, as the
// parser reads them — and no row for a key it does not read; and the
// defaults and ranges that the code holds as constants, or fills in
// itself, are the ones the rows give. A key added to the code without a
// row fails here.
func TestReferenceListsEveryField(t *testing.T) {
	keys := keyPaths(t, reflect.TypeFor[Config](), "")
	// The walk reaches every depth, and skips what the file cannot set.
	for _, k := range []string{"cluster", "regions.<name>.accepted_token_files", "tenants[].costs",
		"etcd.password_file", "envoy.descriptors[].entries[].value", "proxy.routes[].path_prefix", "operators.<name>.token"} {
		if !slices.Contains(keys, k) {
			t.Fatalf("the walk of Config's types misses %s: %v", k, keys)
		}
	}
	if slices.Contains(keys, "etcd.password") || slices.Contains(keys, "tenants[].costs.<name>") {
		t.Fatalf("the walk lists a key the file cannot hold: %v", keys)
	}

	rows := referenceRows(t)
	for _, p := range referenceProblems(rows, keys) {
		t.Error(p)
	}

	// The comparison catches a key without a row, and a row without a key
	// (planted in a reference that lists exactly the keys).
	exact := map[string][]string{}
	for _, k := range keys {
		exact[k] = nil
	}
	if got := referenceProblems(exact, keys); len(got) != 0 {
		t.Errorf("the keys against themselves: %q", got)
	}
	fewer := maps.Clone(exact)
	delete(fewer, "etcd.max_txn_ops")
	if got := referenceProblems(fewer, keys); len(got) != 1 || !strings.Contains(got[0], "etcd.max_txn_ops: the parser reads it") {
		t.Errorf("a key without a row: %q", got)
	}
	if got := referenceProblems(exact, append(slices.Clone(keys), "etcd.new_setting")); len(got) != 1 || !strings.Contains(got[0], "etcd.new_setting: the parser reads it") {
		t.Errorf("a new key in the code: %q", got)
	}
	more := maps.Clone(exact)
	more["etcd.max_txn_op"] = nil
	if got := referenceProblems(more, keys); len(got) != 1 || !strings.Contains(got[0], "etcd.max_txn_op: "+referenceDoc+" has a row") {
		t.Errorf("a row without a key: %q", got)
	}

	// Defaults and ranges, from the code's constants and from what the
	// parser fills in.
	cfg := mustConfig(t, fronted)
	for i, c := range []struct {
		key  string
		col  int
		want string
	}{
		{"cluster", colDefault, "`" + cfg.Cluster + "`"},
		{"tenants[].mode", colDefault, "`" + cfg.Tenants[0].Mode + "`"},
		{"tenants[].regions", colDefault, "every region"},
		{"tenants[].rate", colRange, "`" + quota.MinRate.String() + "`"},
		{"tenants[].lease_duration", colDefault, "`" + quota.DefaultLeaseDuration.String() + "`"},
		{"tenants[].skew_margin", colDefault, "`" + quota.DefaultSkewMargin.String() + "`"},
		{"tenants[].floor", colDefault, "`" + strconv.FormatFloat(quota.DefaultFloor, 'f', -1, 64) + "`"},
		{"etcd.session_ttl", colDefault, "`" + strconv.Itoa(etcdledger.DefaultSessionTTL) + "`"},
		{"agent.retry", colDefault, "`" + cfg.Agent.Retry.String() + "`"},
		{"agent.max_retry", colDefault, "`" + cfg.Agent.MaxRetry.String() + "`"},
		{"envoy.headers", colDefault, "`" + cfg.Envoy.Headers + "`"},
		{"envoy.descriptors", colRange, "1 to " + thousands(MaxRules)},
		{"envoy.descriptors[].entries", colRange, "1 to " + thousands(MaxEnvoyEntries)},
		{"envoy.descriptors[].entries[].key", colRange, "1 to " + thousands(MaxEnvoyString) + " bytes"},
		{"envoy.descriptors[].entries[].value", colRange, thousands(MaxEnvoyString) + " bytes"},
		{"proxy.routes", colRange, "at most " + thousands(MaxRules)},
		{"proxy.routes[].path_prefix", colRange, thousands(MaxEnvoyString) + " bytes"},
	} {
		row, ok := rows[c.key]
		if !ok {
			continue // reported above
		}
		if !strings.Contains(row[c.col], c.want) {
			t.Errorf("step %d: %s: the reference's %s is %q, want it to say %q", i, c.key,
				[]string{colType: "type", colDefault: "default", colRange: "range"}[c.col], row[c.col], c.want)
		}
	}
}
