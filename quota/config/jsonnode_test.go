package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"
)

// jsonOf is a config file in YAML rewritten as JSON, as an operator's
// generator would write it: durations as strings ("10s").
func jsonOf(t testing.TB, yamlText []byte) []byte {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(yamlText, &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestConfigJSONReadsAsYAML: the repository's configs, rewritten in JSON,
// read by the JSON reader into the config the YAML parser reads from the
// same JSON — and from the YAML they came from; and a JSON config that
// is wrong is refused with the YAML parser's words and lines (a document
// the JSON reader does not take is read as YAML, which says what is
// wrong).
func TestConfigJSONReadsAsYAML(t *testing.T) {
	for _, path := range []string{"testdata/good.yaml", "testdata/fronted.yaml", "testdata/metrics.yaml", "testdata/operators.yaml", "../../docs/quota-cluster.yaml"} {
		y, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		j := jsonOf(t, y)
		if !isJSON(j) {
			t.Fatalf("%s: the JSON is not taken for JSON", path)
		}
		fromYAML, errY := parseConfig(y, true)
		fast, errF := parseConfig(j, true)
		slow, errS := parseConfig(j, false)
		if fmt.Sprint(errF) != fmt.Sprint(errS) || fmt.Sprint(errF) != fmt.Sprint(errY) {
			t.Fatalf("%s: errors differ: JSON reader %v, YAML parser %v, the YAML file %v", path, errF, errS, errY)
		}
		if !reflect.DeepEqual(fast, slow) || !reflect.DeepEqual(fast, fromYAML) {
			t.Errorf("%s: the JSON reader's config differs from the YAML parser's:\n%+v\n%+v", path, fast, slow)
		}
	}
	for _, bad := range []string{
		`{"cluster": "x", "regions": {"eu": {"token": "eu-token-0123456789"}}, "tenants": [{"name": "a", "rate": 1, "burst": 2.5, "lease_duration": "ten"}]}`,
		`{"regions": {"eu": {"token": "eu-token-0123456789"}}, "tenants": [{"name": "a", "rate": 1}], "colour": "red"}`,
		`{"regions": {"eu": {"token": "eu-token-0123456789"}},` + "\n" + `"tenants": [{"name": "a", "rate": null}]}`,
		`{"regions": {"eu": {"token": "eu-token-0123456789"}}, "regions": {}, "tenants": []}`,
		`{"regions": {"eu": {"token": "eu-token-0123456789"}}, "etcd": {"session_ttl": 2.5}, "tenants": [{"name": "a", "rate": 1}]}`,
		`{"regions": {"eu": {"token": "eu-token-0123456789"}}, "tenants": [{"name": "a", "rate": 1e400}]}`,
	} {
		_, errF := parseConfig([]byte(bad), true)
		_, errS := parseConfig([]byte(bad), false)
		if errF == nil || fmt.Sprint(errF) != fmt.Sprint(errS) {
			t.Errorf("%s:\nJSON reader: %v\nYAML parser: %v\nwant the same refusal", bad, errF, errS)
		}
	}
}

// FuzzConfigJSON: a JSON document reads the same through the JSON reader
// and through YAML's parser — the same config, or the same refusal.
func FuzzConfigJSON(f *testing.F) {
	y, err := os.ReadFile("testdata/good.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(jsonOf(f, y))
	f.Add([]byte(`{"regions":{"eu":{"token":"eu-token-0123456789"}},"tenants":[{"name":"a","rate":1,"burst":1,"lease_duration":"3s","costs":{"GET":2}}]}`))
	f.Add([]byte(`{"regions":{"eu":{"token":"eu-token-0123456789"}},"tenants":[{"name":"\u00e9","rate":-0,"burst":1E2}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !isJSON(data) || !json.Valid(data) {
			return
		}
		fast, errF := parseConfig(data, true)
		slow, errS := parseConfig(data, false)
		if fmt.Sprint(errF) != fmt.Sprint(errS) {
			t.Fatalf("%q:\nJSON reader: %v\nYAML parser: %v", data, errF, errS)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: the configs differ:\n%+v\n%+v", data, fast, slow)
		}
	})
}

// BenchmarkParseConfig reads a config of 100,000 tenants in three
// regions, as bench/quotascale writes it, in YAML and in JSON.
func BenchmarkParseConfig(b *testing.B) {
	var y, j bytes.Buffer
	y.WriteString("cluster: scale\nregions:\n  eu: {token: \"eu-token-scale-0123456789\"}\n  us: {token: \"us-token-scale-0123456789\"}\n  ap: {token: \"ap-token-scale-0123456789\"}\ntenants:\n")
	j.WriteString(`{"cluster": "scale", "regions": {"eu": {"token": "eu-token-scale-0123456789"}, "us": {"token": "us-token-scale-0123456789"}, "ap": {"token": "ap-token-scale-0123456789"}},` + "\n" + `"tenants": [` + "\n")
	for i := range 100_000 {
		fmt.Fprintf(&y, "  - {name: t%05d, rate: 100, burst: 200, mode: hard, lease_duration: 10s}\n", i)
		if i > 0 {
			j.WriteString(",\n")
		}
		fmt.Fprintf(&j, `  {"name": "t%05d", "rate": 100, "burst": 200, "mode": "hard", "lease_duration": "10s"}`, i)
	}
	j.WriteString("\n]}\n")
	for _, c := range []struct {
		name string
		data []byte
	}{{"yaml", y.Bytes()}, {"json", j.Bytes()}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseConfig(c.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
