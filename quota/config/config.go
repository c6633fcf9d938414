package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/afloat/afloat/quota"
)

// Config is the file every process of a quota cluster reads: the
// coordinators, to know the tenants and the regions' tokens; a region
// agent, its tenants and its own token. YAML, or JSON (a YAML subset).
// Its tenants seed the coordinators' ledger in etcd once, on a new
// cluster; from then on the ledger is the truth and the tenants API
// changes them (docs/quota/operations.md, "Tenants"). Every key, its
// default and its range: docs/quota/config.md.
type Config struct {
	// Cluster names the quota cluster; the etcd prefix records it, and a
	// coordinator refuses a prefix written by another. Default "afloat".
	Cluster string `yaml:"cluster"`
	// Regions maps each region to its settings.
	Regions map[string]RegionConfig `yaml:"regions"`
	// Tenants are what each tenant bought.
	Tenants []TenantConfig `yaml:"tenants"`
	// Etcd configures the ledger.
	Etcd EtcdConfig `yaml:"etcd"`
	// Agent configures the region agents' renewal.
	Agent AgentConfig `yaml:"agent"`
	// Envoy maps Envoy's rate-limit descriptors to tenants (envoy.go).
	Envoy EnvoyConfig `yaml:"envoy"`
	// Proxy maps the reverse proxy's requests to tenants (proxy.go).
	Proxy ProxyConfig `yaml:"proxy"`
	// Operators may change the tenants through the coordinator's API
	// (docs/quota/operations.md, "Tenants"), each with its own token; the name is
	// who made a change in the audit log.
	Operators map[string]OperatorConfig `yaml:"operators"`
}

// OperatorConfig is an operator's entry: Token, at least 16 bytes, or
// TokenFile naming a file holding it; and, while it is rotated, the
// tokens the coordinators accept besides (AcceptedTokens, as
// RegionConfig's).
type OperatorConfig struct {
	Token              string   `yaml:"token"`
	TokenFile          string   `yaml:"token_file"`
	AcceptedTokens     []string `yaml:"accepted_tokens"`
	AcceptedTokenFiles []string `yaml:"accepted_token_files"`
}

// RegionConfig is a region's entry.
type RegionConfig struct {
	// Token is the bearer token the region presents to the coordinator:
	// at least 16 bytes. TokenFile, instead, names a file holding it.
	// Neither: the region authenticates with a client certificate that
	// names it (docs/quota/operations.md, "TLS"), which the coordinators verify
	// with --client-ca, and its agent presents with --client-cert.
	Token     string `yaml:"token"`
	TokenFile string `yaml:"token_file"`
	// AcceptedTokens are tokens the coordinators accept for the region
	// besides Token, at least 16 bytes each, and AcceptedTokenFiles files
	// holding more: the old and the new token while it is rotated
	// without a restart (docs/quota/operations.md, "Rotating a token").
	// Its agent presents Token only.
	AcceptedTokens     []string `yaml:"accepted_tokens"`
	AcceptedTokenFiles []string `yaml:"accepted_token_files"`
}

// TenantConfig is a tenant's entry: quota.Tenant in the file's units.
type TenantConfig struct {
	Name string `yaml:"name"`
	// Rate is R in tokens per second; Burst is B in tokens.
	Rate  float64 `yaml:"rate"`
	Burst float64 `yaml:"burst"`
	// Mode is hard (default) or best-effort.
	Mode string `yaml:"mode"`
	// Emergency is E, best-effort only, in tokens.
	Emergency float64 `yaml:"emergency"`
	// Regions lists where its traffic enters; default every region.
	Regions []string `yaml:"regions"`
	// LeaseDuration, SkewMargin and Floor are nil when not given: then
	// the default (quota.Tenant's). Given, they mean what they say — a
	// skew_margin of 0s is no margin, a floor of 0 no floor, and a
	// lease_duration of 0s is refused — never the default.
	LeaseDuration *time.Duration   `yaml:"lease_duration"`
	SkewMargin    *time.Duration   `yaml:"skew_margin"`
	Floor         *float64         `yaml:"floor"`
	Costs         map[string]int64 `yaml:"costs"`
}

// Deprecated lists the settings the config gives that no longer do
// anything, each with why, for the process to warn of at start: a
// config written for an older afloat still loads.
func (c *Config) Deprecated() []string {
	var out []string
	if c.Etcd.Reserve != nil {
		out = append(out, "etcd.reserve: no longer used: a renewal that changes nothing but its lease's end is answered without a write "+
			"while etcd confirms the coordinator's leadership (docs/quota/design.md, \"Covered renewals\"); remove it")
	}
	return out
}

// EtcdConfig configures the ledger on etcd.
type EtcdConfig struct {
	// Prefix is where the ledger's keys live; default /afloat/quota/.
	Prefix string `yaml:"prefix"`
	// SessionTTL is the election session's TTL in seconds; default 5
	// (etcdledger.Config.SessionTTL says why).
	SessionTTL int `yaml:"session_ttl"`
	// DeposeAfter is how many seconds without a keep-alive, as etcd
	// counts them, a leader's election lease may go before a replica
	// campaigning behind it revokes it; default 2, −1 for never
	// (etcdledger.Config.DeposeAfter says why).
	DeposeAfter int `yaml:"depose_after"`
	// MaxTxnOps is the etcd cluster's --max-txn-ops; default 128.
	MaxTxnOps int `yaml:"max_txn_ops"`
	// Reserve is no longer used (Deprecated): it was how far past a
	// lease's end the ledger's record of it reached. Still read, so that
	// an older config loads, and still checked (0s to 1m).
	Reserve *time.Duration `yaml:"reserve"`
	// CAFile is the file of the CA certificates (PEM) that sign the etcd
	// servers' certificates, for https:// endpoints (default: the
	// system's roots); CertFile and KeyFile, the client certificate etcd
	// asks for with --client-cert-auth.
	CAFile   string `yaml:"ca_file"`
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// User logs in to an etcd cluster with authentication on, with the
	// password in PasswordFile (read as a token file is: 0600 or 0400),
	// or else in the environment variable AFLOAT_QUOTA_ETCD_PASSWORD,
	// which afloat quota coordinator reads. The user needs read and
	// write on Prefix.
	User         string `yaml:"user"`
	PasswordFile string `yaml:"password_file"`
	// Password is what PasswordFile held (LoadConfig reads it), or what
	// the caller set; never in the file itself, and never printed (a
	// Secret prints as xxxxx).
	Password Secret `yaml:"-"`
}

// Secret is a password: it formats, and logs, as xxxxx, so that a
// config printed whole shows none. string(s) is the password.
type Secret string

// String hides the secret.
func (s Secret) String() string { return "xxxxx" }

// GoString hides the secret from %#v too.
func (s Secret) GoString() string { return `"xxxxx"` }

// LogValue hides the secret from log/slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue("xxxxx") }

// EtcdPasswordEnv is where afloat quota coordinator finds the etcd
// user's password when the config gives no password_file.
const EtcdPasswordEnv = "AFLOAT_QUOTA_ETCD_PASSWORD"

// AgentConfig configures region agents.
type AgentConfig struct {
	// Retry is the first wait before asking the coordinator again; it
	// doubles up to MaxRetry. Defaults 250 ms and 2 s: a failover costs
	// regions at most one MaxRetry of renewals.
	Retry    time.Duration `yaml:"retry"`
	MaxRetry time.Duration `yaml:"max_retry"`
}

// Errors of the package.
var (
	// ErrConfigFile: the config file is malformed or out of range; the
	// message names the field.
	ErrConfigFile = errors.New("config: invalid config file")
	// ErrInvalidTenant: a tenant sent to the tenants API is out of range;
	// the message names the field (the rules are the config file's).
	ErrInvalidTenant = errors.New("config: invalid tenant")
	// ErrTokenFile: a token file given on its own (an operator's
	// --token-file) is unreadable, too open or too short; the message
	// names the field. In a config file, the same faults wrap
	// ErrConfigFile.
	ErrTokenFile = errors.New("config: invalid token file")
)

// LoadConfig reads and validates a config file. An empty path is refused
// as a file not given, not read as no tenants.
func LoadConfig(path string) (*Config, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: no file given: want the cluster's YAML or JSON file (docs/quota/config.md)", ErrConfigFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfigFile, err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Regions)) {
		r := cfg.Regions[name]
		if r.TokenFile != "" {
			if r.Token, err = readTokenFile(ErrConfigFile, "regions."+name+".token_file", r.TokenFile); err != nil {
				return nil, err
			}
			r.TokenFile = ""
		}
		if r.AcceptedTokens, err = readAccepted("regions."+name, r.AcceptedTokens, r.AcceptedTokenFiles); err != nil {
			return nil, err
		}
		r.AcceptedTokenFiles = nil
		cfg.Regions[name] = r
	}
	if e := &cfg.Envoy; e.TokenFile != "" {
		if e.Token, err = readTokenFile(ErrConfigFile, "envoy.token_file", e.TokenFile); err != nil {
			return nil, err
		}
		e.TokenFile = ""
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Operators)) {
		o := cfg.Operators[name]
		if o.TokenFile != "" {
			if o.Token, err = readTokenFile(ErrConfigFile, "operators."+name+".token_file", o.TokenFile); err != nil {
				return nil, err
			}
			o.TokenFile = ""
		}
		if o.AcceptedTokens, err = readAccepted("operators."+name, o.AcceptedTokens, o.AcceptedTokenFiles); err != nil {
			return nil, err
		}
		o.AcceptedTokenFiles = nil
		cfg.Operators[name] = o
	}
	if e := &cfg.Etcd; e.PasswordFile != "" {
		pw, err := readSecretFile(ErrConfigFile, "etcd.password_file", e.PasswordFile, "password", 1)
		if err != nil {
			return nil, err
		}
		e.Password, e.PasswordFile = Secret(pw), ""
	}
	if err := cfg.checkTokens(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// readAccepted is a principal's accepted tokens with those of its files
// appended (each file read as ReadTokenFile reads).
func readAccepted(field string, tokens, files []string) ([]string, error) {
	out := slices.Clone(tokens)
	for i, path := range files {
		tok, err := readTokenFile(ErrConfigFile, fmt.Sprintf("%s.accepted_token_files[%d]", field, i), path)
		if err != nil {
			return nil, err
		}
		out = append(out, tok)
	}
	return out, nil
}

// ReadTokenFile reads a token from the file at path, for field (the
// config's regions.eu.token_file, or a flag): at least 16 bytes once
// white space is trimmed. A file that its group or others may read or
// write (any of the permission bits 0o077) is refused, as ssh refuses
// such a private key: readable, it gives the token to every user of the
// machine; writable, it lets them put in a token of their choosing. Make
// it 0600 or 0400 (chmod 600 FILE). The bits are those of the file a
// symbolic link leads to (a Kubernetes secret: mount it with
// defaultMode 0400). On Windows, which has no such bits, it is not
// checked. Errors wrap ErrTokenFile and name field.
func ReadTokenFile(field, path string) (string, error) {
	return readTokenFile(ErrTokenFile, field, path)
}

// readTokenFile is ReadTokenFile with its errors wrapping sentinel.
func readTokenFile(sentinel error, field, path string) (string, error) {
	return readSecretFile(sentinel, field, path, "token", 16)
}

// readSecretFile is readTokenFile for a secret (what names it) of at
// least least bytes.
func readSecretFile(sentinel error, field, path, what string, least int) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", sentinel, field, err)
	}
	defer f.Close()
	st, err := f.Stat() // the file opened, not a name that may change
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", sentinel, field, err)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return "", fmt.Errorf("%w: %s %s: mode %04o lets its group or others read or change the token: "+
			"want 0600 or 0400 (chmod 600 %s)", sentinel, field, path, perm, path)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%w: %s %s: not a regular file", sentinel, field, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", sentinel, field, err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < least {
		return "", fmt.Errorf("%w: %s: a %s of %d bytes: want at least %d", sentinel, field, what, len(tok), least)
	}
	return tok, nil
}

// maxConfig bounds a config file: 10,000 tenants fit in a few MB.
const maxConfig = 64 << 20

// ParseConfig decodes and validates a config file's contents. Unknown
// fields are refused, and every error names the field.
func ParseConfig(data []byte) (*Config, error) { return parseConfig(data, true) }

// parseConfig is ParseConfig; fast reads a JSON document with the JSON
// reader (jsonnode.go), and anything else — YAML, or a document that is
// not well-formed JSON, whose errors YAML's parser words — with YAML's
// parser.
func parseConfig(data []byte, fast bool) (*Config, error) {
	if len(data) > maxConfig {
		return nil, fmt.Errorf("%w: %d bytes: want at most %d", ErrConfigFile, len(data), maxConfig)
	}
	// Parsed once, into a tree: decoded from it, then walked by
	// checkNumbers, which also refuses a key no field has (as the
	// decoder's KnownFields does, which decoding from a tree has not). A
	// file of 100,000 tenants (7.5 MB) took a region agent 5 s to start
	// when it was parsed twice — 8 s beside two others — and a restarted
	// region waits that long for its first leases.
	var doc yaml.Node
	read := false
	if fast && isJSON(data) {
		if n, err := jsonNode(data); err == nil {
			doc, read = *n, true
		}
	}
	if !read {
		if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("%w: the file is empty", ErrConfigFile)
			}
			return nil, fmt.Errorf("%w: %v", ErrConfigFile, err)
		}
	}
	var cfg Config
	if err := doc.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfigFile, err)
	}
	if err := checkNumbers(&doc, reflect.TypeFor[Config](), "", 0); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// Validate reports the first field out of range, naming it.
func (c *Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfigFile}, args...)...)
	}
	if c.Cluster == "" {
		c.Cluster = "afloat"
	}
	if len(c.Cluster) > 128 {
		return bad("cluster: %d bytes: want 1 to 128", len(c.Cluster))
	}
	if len(c.Regions) == 0 || len(c.Regions) > 64 {
		return bad("regions: %d: want 1 to 64", len(c.Regions))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Regions)) {
		r := c.Regions[name]
		switch {
		case name == "" || len(name) > 64 || strings.ContainsAny(name, "/ \t\n"):
			return bad("regions: name %q: want 1 to 64 bytes, no slash or space", name)
		case r.Token != "" && r.TokenFile != "":
			return bad("regions.%s: token and token_file: give one", name)
		case r.Token != "" && len(r.Token) < 16:
			return bad("regions.%s.token: %d bytes: want at least 16 (or a token_file, or neither for a client certificate)", name, len(r.Token))
		}
		if err := checkAccepted("regions."+name, r.AcceptedTokens); err != nil {
			return err
		}
	}
	if len(c.Tenants) == 0 || len(c.Tenants) > 100_000 {
		return bad("tenants: %d: want 1 to 100000", len(c.Tenants))
	}
	seen := map[string]int{}
	for i := range c.Tenants {
		t := &c.Tenants[i]
		field := fmt.Sprintf("tenants[%d]", i)
		if j, dup := seen[t.Name]; dup {
			return bad("%s.name %q: already tenants[%d]", field, t.Name, j)
		}
		seen[t.Name] = i
		if err := c.CheckTenant(field, t); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Operators)) {
		o := c.Operators[name]
		switch {
		case name == "" || len(name) > 64 || strings.ContainsAny(name, "/ \t\n"):
			return bad("operators: name %q: want 1 to 64 bytes, no slash or space", name)
		case o.Token != "" && o.TokenFile != "":
			return bad("operators.%s: token and token_file: give one", name)
		case o.TokenFile == "" && len(o.Token) < 16:
			return bad("operators.%s.token: %d bytes: want at least 16 (or a token_file)", name, len(o.Token))
		}
		if err := checkAccepted("operators."+name, o.AcceptedTokens); err != nil {
			return err
		}
	}
	if err := c.checkTokens(); err != nil {
		return err
	}
	return c.validateRest()
}

// checkAccepted refuses an accepted token under 16 bytes, naming it by
// its index only.
func checkAccepted(field string, tokens []string) error {
	for i, tok := range tokens {
		if len(tok) < 16 {
			return fmt.Errorf("%w: %s.accepted_tokens[%d]: %d bytes: want at least 16", ErrConfigFile, field, i, len(tok))
		}
	}
	return nil
}

// checkTokens refuses a token used by two principals among regions,
// operators and Envoy, accepted tokens counted: each credential names
// one principal. The same token twice for one principal (its token among
// its accepted ones, as a rotation's first step may leave it) is fine.
func (c *Config) checkTokens() error {
	type claimed struct{ owner, field string }
	seen := map[string]claimed{}
	claim := func(owner, field, tok string) error {
		if tok == "" {
			return nil
		}
		if other, dup := seen[tok]; dup && other.owner != owner {
			return fmt.Errorf("%w: %s: the same as %s: each needs its own", ErrConfigFile, field, other.field)
		}
		seen[tok] = claimed{owner, field}
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(c.Regions)) {
		r, owner := c.Regions[name], "regions."+name
		if err := claim(owner, owner+".token", r.Token); err != nil {
			return err
		}
		for i, tok := range r.AcceptedTokens {
			if err := claim(owner, fmt.Sprintf("%s.accepted_tokens[%d]", owner, i), tok); err != nil {
				return err
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Operators)) {
		o, owner := c.Operators[name], "operators."+name
		if err := claim(owner, owner+".token", o.Token); err != nil {
			return err
		}
		for i, tok := range o.AcceptedTokens {
			if err := claim(owner, fmt.Sprintf("%s.accepted_tokens[%d]", owner, i), tok); err != nil {
				return err
			}
		}
	}
	return claim("envoy", "envoy.token", c.Envoy.Token)
}

// CheckTenant validates one tenant entry, naming its fields under field
// (tenants[3], or tenant in the API), and fills its defaults: the one
// validator of the config file and of the tenants API.
func (c *Config) CheckTenant(field string, t *TenantConfig) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfigFile}, args...)...)
	}
	{
		switch {
		case t.Name == "" || len(t.Name) > 128 || strings.ContainsAny(t.Name, "/\n"):
			return bad("%s.name %q: want 1 to 128 bytes, no slash", field, t.Name)
		case !(t.Rate > 0 && t.Rate <= 1e9):
			return bad("%s.rate %v: want above 0 and at most 1e9 tokens a second", field, t.Rate)
		case !(t.Burst >= 0 && t.Burst <= 1e12):
			return bad("%s.burst %v: want 0 to 1e12 tokens", field, t.Burst)
		case !(t.Emergency >= 0 && t.Emergency <= 1e12) || math.IsNaN(t.Emergency):
			return bad("%s.emergency %v: want 0 to the burst", field, t.Emergency)
		}
		if t.Mode == "" {
			t.Mode = "hard"
		}
		if _, err := quota.ParseMode(t.Mode); err != nil {
			return bad("%s.mode %q: want hard or best-effort", field, t.Mode)
		}
		if len(t.Regions) == 0 {
			t.Regions = slices.Sorted(maps.Keys(c.Regions))
		}
		for j, r := range t.Regions {
			if _, ok := c.Regions[r]; !ok {
				return bad("%s.regions[%d] %q: not in regions", field, j, r)
			}
		}
		// Given, zero means zero: refused for the lease (out of range),
		// no margin or no floor (quota.NoSkewMargin, quota.NoFloor) for the
		// others. A negative value is refused here, before it could be
		// read as one of those.
		switch {
		case t.LeaseDuration != nil && *t.LeaseDuration <= 0:
			return bad("%s.lease_duration %v: want 100ms to 1h (leave it out for the default, %v)", field, *t.LeaseDuration, quota.DefaultLeaseDuration)
		case t.SkewMargin != nil && *t.SkewMargin < 0:
			return bad("%s.skew_margin %v: want 0 to less than half the lease duration (leave it out for the default, %v)", field, *t.SkewMargin, quota.DefaultSkewMargin)
		case t.Floor != nil && !(*t.Floor >= 0):
			return bad("%s.floor %v: want 0 to 0.5/regions (leave it out for the default, %v)", field, *t.Floor, quota.DefaultFloor)
		}
		if err := t.Tenant().Validate(); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrConfigFile, field, err)
		}
	}
	return nil
}

func (c *Config) validateRest() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfigFile}, args...)...)
	}
	switch e := c.Etcd; {
	case e.SessionTTL < 0 || e.SessionTTL > 600:
		return bad("etcd.session_ttl %d: want 1 to 600 seconds (0 for the default, 5)", e.SessionTTL)
	case e.DeposeAfter < -1 || e.DeposeAfter > 600:
		return bad("etcd.depose_after %d: want 1 to 600 seconds, or -1 for never (0 for the default, 2)", e.DeposeAfter)
	case e.Reserve != nil && (*e.Reserve < 0 || *e.Reserve > time.Minute):
		return bad("etcd.reserve %v: want 0s to 1m (and none: it is no longer used)", *e.Reserve)
	case e.MaxTxnOps != 0 && (e.MaxTxnOps < 8 || e.MaxTxnOps > 1_000_000):
		return bad("etcd.max_txn_ops %d: want 8 to 1000000 (0 for the default, 128)", e.MaxTxnOps)
	case e.Prefix != "" && !strings.HasPrefix(e.Prefix, "/"):
		return bad("etcd.prefix %q: want a path starting with /", e.Prefix)
	case (e.CertFile == "") != (e.KeyFile == ""):
		return bad("etcd.cert_file and etcd.key_file: give both or neither")
	case e.User == "" && (e.PasswordFile != "" || e.Password != ""):
		return bad("etcd.password_file: a password without etcd.user")
	}
	a := &c.Agent
	if a.Retry == 0 {
		a.Retry = 250 * time.Millisecond
	}
	if a.MaxRetry == 0 {
		a.MaxRetry = 2 * time.Second
	}
	if a.Retry < time.Millisecond || a.MaxRetry < a.Retry || a.MaxRetry > time.Hour {
		return bad("agent.retry %v, agent.max_retry %v: want 1ms ≤ retry ≤ max_retry ≤ 1h", a.Retry, a.MaxRetry)
	}
	tenants := make(map[string]int, len(c.Tenants))
	for i, t := range c.Tenants {
		tenants[t.Name] = i
	}
	if err := c.Envoy.validate(tenants); err != nil {
		return err
	}
	return c.Proxy.validate(tenants)
}

// tenant is the entry as the quota packages take it: an absent optional
// field is quota.Tenant's zero (its default); a given zero is
// quota.NoSkewMargin or quota.NoFloor (CheckTenant has refused negative
// values and a zero lease).
// Tenant is the entry as the quota packages take it: a field not given
// is the default, a zero skew margin or floor is none.
func (t TenantConfig) Tenant() quota.Tenant {
	mode, _ := quota.ParseMode(t.Mode)
	qt := quota.Tenant{
		Name: t.Name, Rate: quota.Tokens(t.Rate), Burst: quota.Tokens(t.Burst),
		Regions: t.Regions, Mode: mode, Emergency: quota.Tokens(t.Emergency), Costs: t.Costs,
	}
	if t.LeaseDuration != nil {
		qt.LeaseDuration = *t.LeaseDuration
	}
	if t.SkewMargin != nil {
		if qt.SkewMargin = *t.SkewMargin; qt.SkewMargin == 0 {
			qt.SkewMargin = quota.NoSkewMargin
		}
	}
	if t.Floor != nil {
		if qt.Floor = *t.Floor; qt.Floor == 0 {
			qt.Floor = quota.NoFloor
		}
	}
	return qt
}

// QuotaTenants is the tenants as the quota packages take them.
func (c *Config) QuotaTenants() []quota.Tenant {
	out := make([]quota.Tenant, len(c.Tenants))
	for i, t := range c.Tenants {
		out[i] = t.Tenant().WithDefaults()
	}
	return out
}

// Tokens maps each region to its token.
func (c *Config) Tokens() map[string]string {
	out := make(map[string]string, len(c.Regions))
	for name, r := range c.Regions {
		out[name] = r.Token
	}
	return out
}

// RegionTokens maps each region to every token the coordinators accept
// for it: its token, then its accepted tokens (none for a region that
// authenticates with its certificate only).
func (c *Config) RegionTokens() map[string][]string {
	out := make(map[string][]string, len(c.Regions))
	for name, r := range c.Regions {
		out[name] = principalTokens(r.Token, r.AcceptedTokens)
	}
	return out
}

// OperatorTokens maps each operator to every token the coordinators
// accept for it: its token, then its accepted tokens.
func (c *Config) OperatorTokens() map[string][]string {
	out := make(map[string][]string, len(c.Operators))
	for name, o := range c.Operators {
		out[name] = principalTokens(o.Token, o.AcceptedTokens)
	}
	return out
}

func principalTokens(tok string, accepted []string) []string {
	var out []string
	if tok != "" {
		out = append(out, tok)
	}
	for _, a := range accepted {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// TenantsOf lists the tenants whose traffic enters region, in file order.
func (c *Config) TenantsOf(region string) []quota.Tenant {
	all := c.QuotaTenants()
	out := all[:0] // filtered in place: grown by append, 100,000 tenants were copied over and over
	for _, t := range all {
		if t.HasRegion(region) {
			out = append(out, t)
		}
	}
	return out
}
