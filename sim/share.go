package sim

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
)

// A run travels in a URL query — a share link, or a GET of the console's
// API — as
//
//	scenario=bad-deploy&seed=7&noise=1&minutes=30&actions=16:heavy_feature:false,28:rollback
//
// Actions are comma-separated minute:control[:value] items: true or false
// for the switches, a number for the numeric controls, nothing for the
// buttons. Every field but scenario may be left out: seed 0, noise on, the
// scenario's length, no actions.

// Query parameter names.
const (
	QueryScenario = "scenario"
	QuerySeed     = "seed"
	QueryNoise    = "noise"
	QueryMinutes  = "minutes"
	QueryActions  = "actions"
)

// MaxQueryActions bounds the actions a query may carry: share links are for
// people, and a URL this long is already past what browsers keep.
const MaxQueryActions = 5000

// Query encodes the run as URL query parameters that ParseQuery reads back
// to the same Config.
func (c Config) Query() url.Values {
	q := url.Values{}
	q.Set(QueryScenario, c.Scenario)
	q.Set(QuerySeed, strconv.FormatUint(uint64(c.Seed), 10))
	if c.Noise {
		q.Set(QueryNoise, "1")
	} else {
		q.Set(QueryNoise, "0")
	}
	if c.Minutes != 0 {
		q.Set(QueryMinutes, strconv.Itoa(c.Minutes))
	}
	if len(c.Actions) > 0 {
		items := make([]string, len(c.Actions))
		for i, a := range c.Actions {
			items[i] = a.queryItem()
		}
		q.Set(QueryActions, strings.Join(items, ","))
	}
	return q
}

func (a Action) queryItem() string {
	item := strconv.Itoa(a.Minute) + ":" + string(a.Control)
	spec, _ := LookupControl(a.Control)
	switch spec.Kind {
	case KindPress:
		return item
	case KindBool:
		return item + ":" + strconv.FormatBool(a.Bool())
	default:
		return item + ":" + strconv.FormatFloat(a.Value, 'g', -1, 64)
	}
}

// ParseQuery reads a run from URL query parameters and validates it whole
// (Config.Validate). Parameters it does not know are left to the caller.
// Errors wrap ErrInvalidConfig (a *ConfigError) or ErrInvalidAction (an
// *ActionError) and name the parameter at fault.
func ParseQuery(q url.Values) (Config, error) {
	var c Config
	single := func(key string) (string, bool, error) {
		vs, ok := q[key]
		switch {
		case !ok:
			return "", false, nil
		case len(vs) > 1:
			return "", false, &ConfigError{Field: key, Msg: "given more than once"}
		}
		return vs[0], true, nil
	}

	name, ok, err := single(QueryScenario)
	if err != nil {
		return Config{}, err
	}
	if !ok {
		return Config{}, &ConfigError{Field: QueryScenario, Msg: "missing: want one of " + strings.Join(ScenarioNames(), ", ")}
	}
	c.Scenario = name

	if v, ok, err := single(QuerySeed); err != nil {
		return Config{}, err
	} else if ok {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return Config{}, &ConfigError{Field: QuerySeed, Msg: fmt.Sprintf("%q: want an integer from 0 to %d", clip([]byte(v)), uint32(math.MaxUint32))}
		}
		c.Seed = uint32(n)
	}

	c.Noise = true
	if v, ok, err := single(QueryNoise); err != nil {
		return Config{}, err
	} else if ok {
		switch v {
		case "1", "true":
		case "0", "false":
			c.Noise = false
		default:
			return Config{}, &ConfigError{Field: QueryNoise, Msg: fmt.Sprintf("%q: want 1 or 0 (true or false)", clip([]byte(v)))}
		}
	}

	if v, ok, err := single(QueryMinutes); err != nil {
		return Config{}, err
	} else if ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return Config{}, &ConfigError{Field: QueryMinutes, Msg: fmt.Sprintf("%q: want an integer from 1 to %d", clip([]byte(v)), MaxMinutes)}
		}
		c.Minutes = n
	}

	if v, ok, err := single(QueryActions); err != nil {
		return Config{}, err
	} else if ok && v != "" {
		items := strings.Split(v, ",")
		if len(items) > MaxQueryActions {
			return Config{}, &ActionError{Field: QueryActions, Msg: fmt.Sprintf("%d actions: want at most %d in a link", len(items), MaxQueryActions)}
		}
		c.Actions = make([]Action, len(items))
		for i, item := range items {
			a, err := parseQueryItem(item)
			if err != nil {
				return Config{}, indexed(err, i)
			}
			c.Actions[i] = a
		}
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// parseQueryItem reads one minute:control[:value] item.
func parseQueryItem(item string) (Action, error) {
	parts := strings.Split(item, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return Action{}, &ActionError{Msg: fmt.Sprintf("%q: want minute:control or minute:control:value", clip([]byte(item)))}
	}
	minute, err := strconv.Atoi(parts[0])
	if err != nil || minute < 0 {
		return Action{}, &ActionError{Field: "minute", Msg: fmt.Sprintf("%q: want an integer from 0", clip([]byte(parts[0])))}
	}
	a := Action{Minute: minute, Control: Control(parts[1])}
	spec, ok := LookupControl(a.Control)
	if !ok {
		return Action{}, &ActionError{Field: "control", Msg: fmt.Sprintf("unknown control %q; want one of %s", clip([]byte(parts[1])), controlNames())}
	}
	wrong := func(got string) error {
		return &ActionError{Field: "value", Msg: fmt.Sprintf("%s takes %s, got %s", spec.Control, spec.rangeText(), got)}
	}
	switch {
	case spec.Kind == KindPress:
		if len(parts) == 3 {
			return Action{}, wrong(strconv.Quote(string(clip([]byte(parts[2])))))
		}
	case len(parts) == 2:
		return Action{}, wrong("no value")
	case spec.Kind == KindBool:
		switch parts[2] {
		case "true":
			a.Value = 1
		case "false":
		default:
			return Action{}, wrong(strconv.Quote(string(clip([]byte(parts[2])))))
		}
	default:
		v, err := strconv.ParseFloat(parts[2], 64)
		if err != nil {
			return Action{}, wrong(strconv.Quote(string(clip([]byte(parts[2])))))
		}
		a.Value = v
	}
	return a, nil
}
