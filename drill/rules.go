package drill

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
)

var (
	// promqlString is a PromQL string literal, left as it is: a label
	// value is not a window.
	promqlString = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	// promqlDuration is a range or subquery [5m], [1h:30s], [1h:], or an
	// offset, with its durations as groups.
	promqlDuration = regexp.MustCompile(`\[\s*([0-9a-z]+)\s*(?::\s*([0-9a-z]*)\s*)?\]|\boffset\s+(-?)([0-9a-z]+)`)
)

// ScaleRules rewrites a Prometheus rules file for a drill at speed: every
// window and duration — ranges, subquery steps, offsets, for:,
// keep_firing_for: and a group's interval: — is divided by the drill's
// factor, RealTime/speed (12 at 5 s a simulated minute), so that each
// rule reads the simulated time it would read in real time and fires at
// the simulated minute it would. Rates and ratios need no change: the
// drill's counters grow at the model's per-second rates at every speed
// (the package doc says why). Comments and layout are kept. An expression
// or duration that does not parse is refused, naming the rule.
func ScaleRules(raw []byte, speed time.Duration) ([]byte, error) {
	if speed < MinSpeed || speed > MaxSpeed {
		return nil, fmt.Errorf("%w: speed %v: want %v to %v", ErrInvalidConfig, speed, MinSpeed, MaxSpeed)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("drill: rules: %w", err)
	}
	if err := scaleNode(&doc, speed, ""); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("drill: rules: %w", err)
	}
	return b.Bytes(), nil
}

// scaleNode scales the durations under n; where names the rule or group
// for errors.
func scaleNode(n *yaml.Node, speed time.Duration, where string) error {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i].Value; k == "alert" || k == "record" || k == "name" {
				where = n.Content[i+1].Value
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, n.Content[i+1]
			var err error
			switch {
			case v.Kind != yaml.ScalarNode:
				err = scaleNode(v, speed, where)
			case k == "expr":
				v.Value, err = scaleExpr(v.Value, speed)
			case k == "for" || k == "keep_firing_for" || k == "interval":
				v.Value, err = scaleDuration(v.Value, speed)
			}
			if err != nil {
				return fmt.Errorf("drill: rules: %s: %s: %w", where, k, err)
			}
		}
		return nil
	}
	for _, c := range n.Content {
		if err := scaleNode(c, speed, where); err != nil {
			return err
		}
	}
	return nil
}

// scaleExpr scales the windows of a PromQL expression, outside its string
// literals.
func scaleExpr(expr string, speed time.Duration) (string, error) {
	var out strings.Builder
	var err error
	scale := func(code string) string {
		return promqlDuration.ReplaceAllStringFunc(code, func(m string) string {
			g := promqlDuration.FindStringSubmatch(m)
			d := func(s string) string {
				if s == "" || err != nil {
					return s
				}
				var scaled string
				scaled, err = scaleDuration(s, speed)
				return scaled
			}
			if strings.HasPrefix(m, "[") {
				if strings.Contains(m, ":") {
					return "[" + d(g[1]) + ":" + d(g[2]) + "]"
				}
				return "[" + d(g[1]) + "]"
			}
			return "offset " + g[3] + d(g[4])
		})
	}
	last := 0
	for _, loc := range promqlString.FindAllStringIndex(expr, -1) {
		out.WriteString(scale(expr[last:loc[0]]))
		out.WriteString(expr[loc[0]:loc[1]])
		last = loc[1]
	}
	out.WriteString(scale(expr[last:]))
	return out.String(), err
}

// scaleDuration divides a Prometheus duration by the drill's factor, to
// the millisecond (at least one).
func scaleDuration(s string, speed time.Duration) (string, error) {
	d, err := model.ParseDuration(s)
	if err != nil {
		return "", fmt.Errorf("%q: %w", s, err)
	}
	// In floating point: a day's nanoseconds times a speed's overflow an
	// int64, and a millisecond is far above a float64's error.
	scaled := time.Duration(float64(d) * float64(speed) / float64(RealTime))
	scaled = max(time.Millisecond, scaled.Round(time.Millisecond))
	return model.Duration(scaled).String(), nil
}
