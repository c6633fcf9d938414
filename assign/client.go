package assign

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/afloat/afloat/assign/internal/lua"
)

// Client is the caller's own Redis client (a server or a cluster), as
// pools and leases use it: FromGoRedis and FromRueidis make one. The
// caller keeps its client and closes it when done; a Client holds nothing
// of its own to close. It is safe for concurrent use: open every pool of a
// process on one Client.
type Client struct {
	conn conn
}

// FromGoRedis runs pools and leases on rdb: a *redis.Client (a server, or
// Sentinel's NewFailoverClient), a *redis.ClusterClient or a *redis.Ring.
//
// rdb must not resend a command after a lost connection: a pick is not
// idempotent, and a resent one counts an assignment nobody received. Its
// options must say so — MaxRetries: -1 on a Client or a Ring; on a
// ClusterClient MaxRedirects: -1 too, since go-redis resends a cluster's
// command after a network error up to MaxRedirects times (a MOVED or ASK
// answer during a resharding then fails the call: nothing ran, so it is
// safe to call again). A client with retries on, or of another type, whose
// retries cannot be read, is refused with ErrInvalid. A call that loses its
// connection answers ErrAmbiguous instead; PickID makes its retry safe.
func FromGoRedis(rdb redis.UniversalClient) (*Client, error) {
	if err := checkGoRedis(rdb); err != nil {
		return nil, err
	}
	return &Client{conn: goRedisConn{rdb}}, nil
}

// checkGoRedis refuses a go-redis client that would resend a command after
// a network error. The options read are the client's own, normalized by
// go-redis (-1 is stored as 0, 0 as the default).
func checkGoRedis(rdb redis.UniversalClient) error {
	const want = "a pick is not idempotent: set %s: -1 so that a lost connection gives ErrAmbiguous, not a second pick"
	switch c := rdb.(type) {
	case nil:
		return fmt.Errorf("%w: nil Redis client", ErrInvalid)
	case *redis.Client:
		if c == nil {
			return fmt.Errorf("%w: nil Redis client", ErrInvalid)
		}
		if n := c.Options().MaxRetries; n > 0 {
			return fmt.Errorf("%w: go-redis client with MaxRetries %d: "+want, ErrInvalid, n, "MaxRetries")
		}
	case *redis.Ring:
		if c == nil {
			return fmt.Errorf("%w: nil Redis client", ErrInvalid)
		}
		if n := c.Options().MaxRetries; n > 0 {
			return fmt.Errorf("%w: go-redis ring with MaxRetries %d: "+want, ErrInvalid, n, "MaxRetries")
		}
	case *redis.ClusterClient:
		if c == nil {
			return fmt.Errorf("%w: nil Redis client", ErrInvalid)
		}
		o := c.Options()
		if o.MaxRetries > 0 {
			return fmt.Errorf("%w: go-redis cluster client with MaxRetries %d: "+want, ErrInvalid, o.MaxRetries, "MaxRetries")
		}
		if o.MaxRedirects > 0 {
			return fmt.Errorf("%w: go-redis cluster client with MaxRedirects %d (it resends after a network error too): "+want, ErrInvalid, o.MaxRedirects, "MaxRedirects")
		}
	default:
		return fmt.Errorf("%w: go-redis client of type %T: want a *redis.Client, *redis.ClusterClient or *redis.Ring, whose retries can be checked", ErrInvalid, rdb)
	}
	return nil
}

// FromRueidis runs pools and leases on c, a rueidis client of a server or
// a cluster. rueidis never resends a write such as the scripts' EVALSHA
// after a lost connection, whatever its DisableRetry (it retries only
// read-only commands), so any client will do; a call that loses its
// connection answers ErrAmbiguous. rueidis also pipelines the concurrent
// calls of many goroutines on one connection by itself, which made it the
// faster of the two clients for single picks (docs/assign.md).
func FromRueidis(c rueidis.Client) (*Client, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil Redis client", ErrInvalid)
	}
	return &Client{conn: rueidisConn{c}}, nil
}

// conn is what pools and leases need of a Redis client: scripts run one at
// a time or pipelined, and plain commands. Each client's answers are
// turned into a reply, and its errors into the package's few kinds (errNil,
// replyError, unsent, or the network's own error, which classify calls
// ambiguous), so that nothing past this file knows which client it runs on.
type conn interface {
	// eval runs one call of a script.
	eval(ctx context.Context, c *call) reply
	// evalMulti runs the calls in one pipeline: one round trip (per node
	// of a cluster).
	evalMulti(ctx context.Context, cs []*call) []reply
	// do runs a plain command on keys (named apart, for a cluster's
	// routing), then args.
	do(ctx context.Context, cmd string, keys []string, args ...string) reply
	// pin builds a call that will be sent many times once and for all,
	// where the client can keep it built.
	pin(c *call)
}

// call is one call of a script: by its SHA-1 (EVALSHA), or by its source
// (EVAL) after the server answered NOSCRIPT.
type call struct {
	s          *lua.Script
	keys, args []string
	src        bool
	// built is the client's own command for the call, made by pin: the
	// plain pick sends the same bytes every time, and building it per pick
	// was a measurable share of the client's CPU, which shares the machine
	// with Redis (rueidis only).
	built any
}

// withSource is the call sent again as EVAL.
func (c *call) withSource() *call { return &call{s: c.s, keys: c.keys, args: c.args, src: true} }

// errNil is Redis's nil answer: a pick that found no member.
var errNil = errors.New("redis: nil")

// replyError is an error answer of the server: a definite refusal, the
// call ran to it (or, NOSCRIPT, did not run at all).
type replyError string

func (e replyError) Error() string { return string(e) }

// unsent is a client's error that says nothing was sent: the client was
// closed, or no connection came free.
type unsent struct{ err error }

func (e *unsent) Error() string { return e.err.Error() }
func (e *unsent) Unwrap() error { return e.err }

// reply is an answer of the server in one form whichever client read it:
// v a string, an int64, nil, or a []any of those, of nested []any, and of
// replyError for an element that is an error; err the error of the whole
// call.
type reply struct {
	v   any
	err error
}

func (r reply) Error() error { return r.err }

func (r reply) ToString() (string, error) {
	if r.err != nil {
		return "", r.err
	}
	switch v := r.v.(type) {
	case string:
		return v, nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case nil:
		return "", errNil
	}
	return "", fmt.Errorf("redis: a %T where a string was due", r.v)
}

func (r reply) AsInt64() (int64, error) {
	if r.err != nil {
		return 0, r.err
	}
	switch v := r.v.(type) {
	case int64:
		return v, nil
	case string:
		return strconv.ParseInt(v, 10, 64)
	case nil:
		return 0, errNil
	}
	return 0, fmt.Errorf("redis: a %T where an integer was due", r.v)
}

func (r reply) ToArray() ([]reply, error) {
	if r.err != nil {
		return nil, r.err
	}
	xs, ok := r.v.([]any)
	if !ok {
		if r.v == nil {
			return nil, errNil
		}
		return nil, fmt.Errorf("redis: a %T where an array was due", r.v)
	}
	out := make([]reply, len(xs))
	for i, x := range xs {
		switch x := x.(type) {
		case replyError:
			out[i].err = x
		case nil:
			out[i].err = errNil
		default:
			out[i].v = x
		}
	}
	return out, nil
}

func (r reply) AsStrSlice() ([]string, error) {
	arr, err := r.ToArray()
	if err != nil {
		return nil, err
	}
	out := make([]string, len(arr))
	for i, x := range arr {
		if out[i], err = x.ToString(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (r reply) AsIntSlice() ([]int64, error) {
	arr, err := r.ToArray()
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(arr))
	for i, x := range arr {
		if out[i], err = x.AsInt64(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rueidisConn runs the calls on a rueidis client.
type rueidisConn struct{ c rueidis.Client }

func (r rueidisConn) build(c *call) rueidis.Completed {
	if c.src {
		return r.c.B().Eval().Script(c.s.Src).Numkeys(int64(len(c.keys))).Key(c.keys...).Arg(c.args...).Build()
	}
	return r.c.B().Evalsha().Sha1(c.s.SHA).Numkeys(int64(len(c.keys))).Key(c.keys...).Arg(c.args...).Build()
}

func (r rueidisConn) command(c *call) rueidis.Completed {
	if b, ok := c.built.(rueidis.Completed); ok {
		return b
	}
	return r.build(c)
}

func (r rueidisConn) pin(c *call) { c.built = r.build(c).Pin() }

func (r rueidisConn) eval(ctx context.Context, c *call) reply {
	return fromRueidis(r.c.Do(ctx, r.command(c)))
}

func (r rueidisConn) evalMulti(ctx context.Context, cs []*call) []reply {
	cmds := make(rueidis.Commands, len(cs))
	for i, c := range cs {
		cmds[i] = r.command(c)
	}
	res := r.c.DoMulti(ctx, cmds...)
	out := make([]reply, len(res))
	for i, x := range res {
		out[i] = fromRueidis(x)
	}
	return out
}

func (r rueidisConn) do(ctx context.Context, cmd string, keys []string, args ...string) reply {
	return fromRueidis(r.c.Do(ctx, r.c.B().Arbitrary(cmd).Keys(keys...).Args(args...).Build()))
}

func fromRueidis(res rueidis.RedisResult) reply {
	if err := res.NonRedisError(); err != nil {
		return reply{err: err}
	}
	v, err := res.ToAny()
	if err != nil {
		return reply{err: rueidisErr(err)}
	}
	return reply{v: rueidisValue(v)}
}

func rueidisErr(err error) error {
	if rueidis.IsRedisNil(err) {
		return errNil
	}
	if re, ok := rueidis.IsRedisErr(err); ok {
		return replyError(re.Error())
	}
	return err
}

// rueidisValue turns the errors inside an array into replyErrors, and a
// map (RESP3's answer to HGETALL) into a flat list of field, value.
func rueidisValue(v any) any {
	if m, ok := v.(map[string]any); ok {
		flat := make([]any, 0, 2*len(m))
		for k, x := range m {
			flat = append(flat, k, x)
		}
		v = flat
	}
	xs, ok := v.([]any)
	if !ok {
		return v
	}
	for i, x := range xs {
		switch x := x.(type) {
		case error:
			xs[i] = rueidisErr(x)
			if xs[i] == errNil {
				xs[i] = nil
			}
		case []any:
			xs[i] = rueidisValue(x)
		}
	}
	return xs
}

// goRedisConn runs the calls on a go-redis client.
type goRedisConn struct{ c redis.UniversalClient }

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func (g goRedisConn) send(ctx context.Context, c redis.Cmdable, x *call) *redis.Cmd {
	if x.src {
		return c.Eval(ctx, x.s.Src, x.keys, anys(x.args)...)
	}
	return c.EvalSha(ctx, x.s.SHA, x.keys, anys(x.args)...)
}

func (g goRedisConn) pin(*call) {}

func (g goRedisConn) eval(ctx context.Context, c *call) reply {
	return fromGoRedis(g.send(ctx, g.c, c).Result())
}

func (g goRedisConn) evalMulti(ctx context.Context, cs []*call) []reply {
	sent := make([]*redis.Cmd, len(cs))
	// The pipeline's own error is its first command's that failed: each
	// command carries its own below.
	g.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range cs {
			sent[i] = g.send(ctx, p, c)
		}
		return nil
	})
	out := make([]reply, len(cs))
	for i, cmd := range sent {
		out[i] = fromGoRedis(cmd.Result())
	}
	return out
}

func (g goRedisConn) do(ctx context.Context, cmd string, keys []string, args ...string) reply {
	a := make([]any, 0, 1+len(keys)+len(args))
	a = append(a, cmd)
	a = append(a, anys(keys)...)
	a = append(a, anys(args)...)
	return fromGoRedis(g.c.Do(ctx, a...).Result())
}

func fromGoRedis(v any, err error) reply {
	if err != nil {
		return reply{err: goRedisErr(err)}
	}
	return reply{v: goRedisValue(v)}
}

func goRedisErr(err error) error {
	var re redis.Error
	switch {
	case errors.Is(err, redis.Nil):
		return errNil
	case errors.As(err, &re):
		return replyError(re.Error())
	case errors.Is(err, redis.ErrClosed), errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted):
		// The pool gave no connection: nothing was written.
		return &unsent{err}
	}
	return err
}

// goRedisValue turns the errors inside an array into replyErrors, and a
// map (RESP3's answer to HGETALL) into a flat list of field, value.
func goRedisValue(v any) any {
	if m, ok := v.(map[any]any); ok {
		flat := make([]any, 0, 2*len(m))
		for k, x := range m {
			flat = append(flat, fmt.Sprint(k), x)
		}
		v = flat
	}
	xs, ok := v.([]any)
	if !ok {
		return v
	}
	for i, x := range xs {
		switch x := x.(type) {
		case error:
			if e := goRedisErr(x); e == errNil {
				xs[i] = nil
			} else {
				xs[i] = replyError(x.Error())
			}
		case []any:
			xs[i] = goRedisValue(x)
		}
	}
	return xs
}
