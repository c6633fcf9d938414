package eventlog

import (
	"fmt"
	"strings"
)

// Kind is what an event says happened: its ev in the log. The zero Kind
// is no kind: an event must be given one. Event's documentation says
// what each kind carries.
type Kind uint8

// The kinds of events, in the order Event's documentation lists them.
const (
	Start Kind = iota + 1
	Admit
	Reject
	Counts
	Lease
	End
	Credit
	Install
	Supersede
	Expire
	Return
	Traffic
	Partition
	Heal
	Crash
	Restart
	Pause
	Wake
	Fenced
	Skew
	Sample
	Tenant
	Stop
	// Summary is no event of a run: it is the line afloat quota chaos
	// prints after its log on standard output. Readers pass it on; the
	// checker ignores it.
	Summary
	// exit is no event of a log either, and no log may hold one
	// (ParseKind refuses it): Merge marks with it where a process's
	// events end, one for each lease the process was still spending
	// under, and the Checker ends that use there.
	exit
)

// names are the kinds as the log writes them.
var names = [...]string{
	Start: "start", Admit: "admit", Reject: "reject", Counts: "counts", Lease: "lease", End: "end", Credit: "credit",
	Install: "install", Supersede: "supersede", Expire: "expire", Return: "return", Traffic: "traffic",
	Partition: "partition", Heal: "heal", Crash: "crash", Restart: "restart", Pause: "pause", Wake: "wake",
	Fenced: "fenced", Skew: "skew", Sample: "sample", Tenant: "tenant", Stop: "stop", Summary: "summary",
	exit: "exit",
}

// String is the kind as the log writes it: "admit" for Admit.
func (k Kind) String() string {
	if k.valid() {
		return names[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

func (k Kind) valid() bool { return k >= Start && int(k) < len(names) }

// ParseKind reads a kind as the log writes it. It refuses any other name
// with ErrUnknownEvent: a kind the reader does not know is one the
// checker would skip, so a misspelt or forged admission would pass
// unchecked.
func ParseKind(s string) (Kind, error) {
	for k := Start; k <= Summary; k++ {
		if names[k] == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("%w %q: want one of %s (or %s)", ErrUnknownEvent, s, strings.Join(names[Start:Summary], ", "), names[Summary])
}
