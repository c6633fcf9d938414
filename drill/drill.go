package drill

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/afloat/afloat/internal/hostcheck"
	"github.com/afloat/afloat/internal/strictjson"
	"github.com/afloat/afloat/sim"
)

// The speeds a drill runs at: the wall time one simulated minute takes.
const (
	// RealTime is a simulated minute in a minute of wall time: the
	// metrics' rates and the alert rules' windows are the model's own.
	RealTime = time.Minute
	// MinSpeed is the fastest drill: ten simulated minutes a second of
	// wall time is as fast as a scrape every 100 ms can follow.
	MinSpeed = 100 * time.Millisecond
	// MaxSpeed is the slowest: a simulated minute in ten of wall time.
	MaxSpeed = 10 * time.Minute
)

// MinTokenBytes is the shortest token a drill takes.
const MinTokenBytes = 16

// Config configures a drill: the run (Scenario, Seed, Speed), where it
// listens and who may pull its levers. DefaultConfig gives the values
// afloat drill starts with; the zero value is not valid.
type Config struct {
	Scenario string        // a built-in scenario (sim.ScenarioNames); mystery by default
	Seed     uint32        // the run's seed: the same seed and levers give the same drill
	Speed    time.Duration // wall time a simulated minute takes, MinSpeed to MaxSpeed; RealTime is a minute

	Addr        string // listen address; loopback unless AllowRemote
	AllowRemote bool   // listen beyond loopback and answer any Host name; Token is then required
	// Token is the bearer token levers and the Alertmanager webhook need,
	// at least MinTokenBytes. It is required: NewToken makes one.
	Token string
	// Console is the base URL of an afloat console that opens the
	// postmortem's share link.
	Console string

	Clock      Clock        // the wall clock; nil is the machine's
	Logger     *slog.Logger // lifecycle logs; nil discards them
	Postmortem io.Writer    // where the postmortem is written when the drill ends; nil: nowhere (GET /postmortem serves it)
}

// DefaultConfig returns afloat drill's defaults: the mystery morning,
// seed 1, five seconds of wall time a simulated minute (a 240-minute
// morning in 20 minutes), on 127.0.0.1:8081. Token is left empty: set one,
// or NewToken's.
func DefaultConfig() Config {
	return Config{
		Scenario: "mystery",
		Seed:     1,
		Speed:    5 * time.Second,
		Addr:     "127.0.0.1:8081",
		Console:  "http://127.0.0.1:8080",
	}
}

// Validate checks the configuration: a scenario the model knows, a speed
// in range, a host:port address that is on loopback unless AllowRemote,
// and a token.
func (c Config) Validate() error {
	if _, err := sim.Lookup(c.Scenario); err != nil {
		return fmt.Errorf("%w: scenario %q: want one of %s", ErrInvalidConfig, c.Scenario, strings.Join(sim.ScenarioNames(), ", "))
	}
	if c.Speed < MinSpeed || c.Speed > MaxSpeed {
		return fmt.Errorf("%w: speed %v: want a simulated minute in %v to %v of wall time (realtime is 1m)", ErrInvalidConfig, c.Speed, MinSpeed, MaxSpeed)
	}
	_, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return fmt.Errorf("%w: listen %q: want host:port, such as 127.0.0.1:8081 (port 0: any free port)", ErrInvalidConfig, c.Addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%w: listen %q: want a port from 0 to 65535", ErrInvalidConfig, c.Addr)
	}
	if !c.AllowRemote && !hostcheck.ListenLoopback(c.Addr) {
		return fmt.Errorf("%w: listen %q is beyond loopback: listen on 127.0.0.1 or [::1], or allow it explicitly (allow-remote) with a token of your own", ErrInvalidConfig, c.Addr)
	}
	if len(c.Token) < MinTokenBytes {
		return fmt.Errorf("%w: token of %d bytes: want at least %d", ErrInvalidConfig, len(c.Token), MinTokenBytes)
	}
	return nil
}

// Warning returns what a person starting a drill with c should be told,
// or "": that it listens beyond loopback, where anyone who reaches it can
// read its metrics and anyone with the token can pull its levers.
func (c Config) Warning() string {
	if c.AllowRemote && !hostcheck.ListenLoopback(c.Addr) {
		return fmt.Sprintf("listening on %s, beyond loopback: anyone who reaches it reads the drill's metrics and status, "+
			"and anyone holding the token pulls its levers. The token travels in clear over HTTP: keep the drill on a network you trust.", c.Addr)
	}
	if c.AllowRemote {
		return fmt.Sprintf("allow-remote with the loopback address %s turns off the Host check: a web page on a name "+
			"that resolves to 127.0.0.1 (DNS rebinding) can read the drill's metrics and status.", c.Addr)
	}
	return ""
}

// ParseSpeed reads a drill's speed: "realtime", or a duration such as 5s
// (the wall time a simulated minute takes), MinSpeed to MaxSpeed.
func ParseSpeed(s string) (time.Duration, error) {
	if s == "realtime" {
		return RealTime, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < MinSpeed || d > MaxSpeed {
		return 0, fmt.Errorf("%w: speed %q: want realtime, or the wall time of a simulated minute from %v to %v, such as 5s", ErrInvalidConfig, s, MinSpeed, MaxSpeed)
	}
	return d, nil
}

// Drill is a drill's run laid on the wall clock: simulated minute m takes
// the wall interval [Start + m·Speed, Start + (m+1)·Speed). Its minutes are
// stepped as the instants its methods are given reach them, each with the
// levers pulled before it started, so that at any instant it is a pure
// function of its Config, its start, the levers and that instant: it
// reads no clock. Its frames are the ones sim.Run gives for Run().
//
// A Drill is not safe for concurrent use: the Server serializes it.
type Drill struct {
	speed  time.Duration
	start  time.Time
	sc     sim.Scenario
	run    sim.Config // the actions taken so far in run.Actions
	length int
	s      *sim.Sim

	frames []sim.Frame
	cum    []counters // cum[m]: the counters at the start of minute m, one more than frames
	rates  []counters // rates[m]: the counters' growth a wall second during minute m

	versions []string       // versions[m]: the build live in minute m, as build_info labels it
	version  string         // the build live after the last frame
	deploys  int            // deploys so far
	before   map[int]string // the version each rollout (by start minute) replaced
	rollout  int            // the live rollout's start minute, -1 for none
}

// New starts a drill of cfg's scenario, seed and speed at the wall time
// start. Only those fields of cfg are read.
func New(cfg Config, start time.Time) (*Drill, error) {
	if cfg.Speed < MinSpeed || cfg.Speed > MaxSpeed {
		return nil, fmt.Errorf("%w: speed %v: want %v to %v", ErrInvalidConfig, cfg.Speed, MinSpeed, MaxSpeed)
	}
	run := sim.Config{Scenario: cfg.Scenario, Seed: cfg.Seed, Noise: true}
	length, err := run.Length()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	sc, _ := sim.Lookup(cfg.Scenario)
	s, err := sim.New(sc, cfg.Seed, true)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return &Drill{
		speed: cfg.Speed, start: start, sc: sc, run: run, length: length, s: s,
		cum: []counters{{}}, version: versionName(0), before: map[int]string{}, rollout: -1,
	}, nil
}

// versionName is the version label of the build the nth deploy shipped
// (0: the one the run opens with).
func versionName(n int) string { return fmt.Sprintf("1.%d.0", 41+n) }

// Start returns the wall time of minute 0's start.
func (d *Drill) Start() time.Time { return d.start }

// End returns the wall time the drill ends: the end of its last minute.
func (d *Drill) End() time.Time { return d.start.Add(time.Duration(d.length) * d.speed) }

// Minutes returns the drill's length in simulated minutes.
func (d *Drill) Minutes() int { return d.length }

// Scenario returns the scenario being drilled.
func (d *Drill) Scenario() sim.Scenario { return d.sc }

// MinuteAt returns the simulated minute under way at now, and whether the
// drill has ended (then minute is Minutes()). Before the start it is
// minute 0.
func (d *Drill) MinuteAt(now time.Time) (minute int, ended bool) {
	el := now.Sub(d.start)
	if el < 0 {
		return 0, false
	}
	m := int(el / d.speed)
	if m >= d.length {
		return d.length, true
	}
	return m, false
}

// minuteStart is the wall time minute m starts.
func (d *Drill) minuteStart(m int) time.Time { return d.start.Add(time.Duration(m) * d.speed) }

// advance steps the model through every minute that has started by now.
func (d *Drill) advance(now time.Time) {
	m, ended := d.MinuteAt(now)
	if ended {
		m = d.length - 1
	}
	for len(d.frames) <= m {
		d.step()
	}
}

// step simulates the next minute with the levers pulled for it.
func (d *Drill) step() {
	m := len(d.frames)
	var acts []sim.Action
	for _, a := range d.run.Actions {
		if a.Minute == m {
			acts = append(acts, a)
		}
	}
	f, err := d.s.Step(acts)
	if err != nil {
		panic(err) // cannot happen: Lever validated each action for this minute
	}
	if f.Deploy {
		d.deploys++
		d.before[m] = d.version
		d.version = versionName(d.deploys)
	}
	d.versions = append(d.versions, d.version)
	// A rollback that completed in this minute puts the build its rollout
	// replaced back from the next one on.
	start, live := d.s.Rollout()
	if !live && d.rollout >= 0 {
		d.version = d.before[d.rollout]
	}
	d.rollout = -1
	if live {
		d.rollout = start
	}

	r := ratesOf(f)
	next := d.cum[m]
	next.add(r, d.speed.Seconds())
	d.frames = append(d.frames, f)
	d.rates = append(d.rates, r)
	d.cum = append(d.cum, next)
}

// Frames returns the frames of the minutes that have started by now, the
// one under way last. It is a copy.
func (d *Drill) Frames(now time.Time) []sim.Frame {
	d.advance(now)
	return append([]sim.Frame(nil), d.frames...)
}

// Actions returns the levers pulled so far, each with the minute it takes
// effect, in the order they were pulled.
func (d *Drill) Actions() []sim.Action { return append([]sim.Action(nil), d.run.Actions...) }

// Run returns the run as the console replays it: the scenario, the seed,
// noise on, and the levers pulled so far. Its Query is the share link.
func (d *Drill) Run() sim.Config {
	c := d.run
	c.Actions = d.Actions()
	return c
}

// Lever pulls a lever at now: it sets control to value (1 or 0 for the
// switches, 0 for the buttons) at the start of the next simulated minute,
// and returns the action as recorded, with that minute. A lever the
// console would refuse is refused with a *LeverError (ErrInvalidLever)
// naming the field and the range; one that would take effect after the
// drill's last minute with ErrEnded. Either way nothing changes.
func (d *Drill) Lever(now time.Time, control sim.Control, value float64) (sim.Action, error) {
	d.advance(now)
	next := len(d.frames)
	if _, ended := d.MinuteAt(now); ended || next >= d.length {
		last := d.frames[d.length-1].Clock
		if ended {
			return sim.Action{}, fmt.Errorf("%w at %s (minute %d): a lever now would change nothing", ErrEnded, sim.Clock(d.sc.Start+d.length), d.length)
		}
		return sim.Action{}, fmt.Errorf("%w: its last minute, %s, is under way, and a lever takes effect at the start of the next", ErrEnded, last)
	}
	a := sim.Action{Minute: next, Control: control, Value: value}
	if err := a.Validate(d.length); err != nil {
		return sim.Action{}, leverError(err)
	}
	d.run.Actions = append(d.run.Actions, a)
	return a, nil
}

// leverError words the model's refusal of an action as a lever's.
func leverError(err error) error {
	var ae *sim.ActionError
	if errors.As(err, &ae) {
		return &LeverError{Field: ae.Field, Msg: ae.Msg}
	}
	return &LeverError{Msg: err.Error()}
}

// ParseLever reads a lever's JSON body, {"control": "fleet_floor",
// "value": 20}, or {"control": "rollback"} for a button: the console's
// action without its minute, which the drill sets (the next to start).
// Its checks and messages are the console's (sim.Action's UnmarshalJSON);
// what it refuses is a *LeverError naming the field.
func ParseLever(body []byte) (sim.Control, float64, error) {
	var in struct {
		Minute  json.RawMessage `json:"minute"`
		Control json.RawMessage `json:"control"`
		Value   json.RawMessage `json:"value"`
	}
	if err := strictjson.Decode(body, &in); err != nil {
		var se *strictjson.Error
		if errors.As(err, &se) {
			return "", 0, &LeverError{Field: se.Path, Msg: se.Reason + `; want an object like {"control": "fleet_floor", "value": 20}`}
		}
		return "", 0, &LeverError{Msg: err.Error()}
	}
	if in.Minute != nil {
		return "", 0, &LeverError{Field: "minute", Msg: "the drill sets the minute: a lever takes effect at the start of the next simulated minute; leave it out"}
	}
	var b bytes.Buffer
	b.WriteString(`{"minute":0`)
	if in.Control != nil {
		b.WriteString(`,"control":`)
		b.Write(in.Control)
	}
	if in.Value != nil {
		b.WriteString(`,"value":`)
		b.Write(in.Value)
	}
	b.WriteByte('}')
	var a sim.Action
	if err := a.UnmarshalJSON(b.Bytes()); err != nil {
		return "", 0, leverError(err)
	}
	return a.Control, a.Value, nil
}

// Status is what GET /status answers: where the drill is and what the
// team has done, nothing the dashboards would not show.
type Status struct {
	Scenario string       `json:"scenario"`
	Title    string       `json:"title"`
	Briefing string       `json:"briefing"`
	Seed     uint32       `json:"seed"`
	Speed    string       `json:"speed"` // wall time a simulated minute takes
	Minute   int          `json:"minute"`
	Minutes  int          `json:"minutes"`
	Clock    string       `json:"clock"` // the simulated time of day
	Ended    bool         `json:"ended"`
	Actions  []sim.Action `json:"actions"`
	// Share is the run's share link query, given once the drill has
	// ended: before, it would replay the morning's future.
	Share string `json:"share,omitempty"`
}

// StatusAt returns the drill's status at now.
func (d *Drill) StatusAt(now time.Time) Status {
	d.advance(now)
	m, ended := d.MinuteAt(now)
	st := Status{
		Scenario: d.sc.Name, Title: d.sc.Title, Briefing: d.sc.Briefing, Seed: d.run.Seed, Speed: d.speed.String(),
		Minute: m, Minutes: d.length, Clock: sim.Clock(d.sc.Start + m), Ended: ended, Actions: d.Actions(),
	}
	if st.Actions == nil {
		st.Actions = []sim.Action{}
	}
	if ended {
		st.Share = d.Run().Query().Encode()
	}
	return st
}

// clampUnit keeps a share in [0, 1] against rounding.
func clampUnit(x float64) float64 { return math.Max(0, math.Min(1, x)) }
