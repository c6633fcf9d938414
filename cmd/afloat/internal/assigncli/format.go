package assigncli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/afloat/afloat/assign"
	"github.com/afloat/afloat/assign/proxypool"
)

// writeMembers prints a pool's members (Status.Members) in format:
// "table", a column each for the name, the count, the state and the
// failures, or "jsonl", one assign.Member a line. An unknown format is
// assign.ErrInvalid, and nothing is written.
func writeMembers(w io.Writer, ms []assign.Member, format string) error {
	switch format {
	case "jsonl":
		enc := json.NewEncoder(w)
		for _, m := range ms {
			if err := enc.Encode(m); err != nil {
				return err
			}
		}
		return nil
	case "table":
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "MEMBER\tCOUNT\tSTATE\tFAILURES")
		for _, m := range ms {
			state := memberState(m)
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\n", m.Name, m.Count, state, m.Failures)
		}
		return tw.Flush()
	}
	return fmt.Errorf("%w: format %q: want table or jsonl", assign.ErrInvalid, format)
}

// writeHealth prints probes' outcomes (proxypool.Probe, Report.Health)
// as a table, "-" where a probe has no status or no error, then how many
// of them were healthy.
func writeHealth(w io.Writer, hs []proxypool.Health) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROXY\tHEALTHY\tSTATUS\tTOOK\tERROR")
	healthy := 0
	for _, h := range hs {
		status := "-" // no answer
		if h.Status != 0 {
			status = strconv.Itoa(h.Status)
		}
		if h.Healthy {
			healthy++
		}
		fmt.Fprintf(tw, "%s\t%v\t%s\t%v\t%s\n", h.Proxy, h.Healthy, status, h.Took.Round(time.Millisecond), cmp.Or(h.Err, "-"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d of %d healthy\n", healthy, len(hs))
	return err
}

// writeAdded prints what Add did to the pool, one line.
func writeAdded(w io.Writer, pool string, r assign.AddResult) error {
	line := fmt.Sprintf("added %d to pool %q", r.Added, pool)
	if r.Active > 0 {
		line += fmt.Sprintf("; %d already active (counts untouched)", r.Active)
	}
	if r.Removed > 0 {
		line += fmt.Sprintf("; %d removed (afloat assign restore brings them back)", r.Removed)
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// writeCheckReport prints what proxypool.Pool.Check did: every probe
// (writeHealth), then how many members joined, came back and left.
func writeCheckReport(w io.Writer, pool string, r proxypool.Report) error {
	if err := writeHealth(w, r.Health); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "pool %q: %d joined, %d restored, %d left\n", pool, len(r.Joined), len(r.Restored), len(r.Left))
	return err
}

func memberState(m assign.Member) string {
	switch {
	case !m.Active:
		return "removed"
	case m.Concurrency > 0 && m.InFlight >= int64(m.Concurrency):
		return "full"
	case !m.CoolingUntil.IsZero():
		return "cooling"
	}
	return "active"
}

// checkFormat refuses a format writeStatus and writeInFlight do not
// write, so that a command line can be refused before anything connects.
func checkFormat(format string) error {
	if format != "table" && format != "json" {
		return fmt.Errorf("%w: format %q: want table or json", assign.ErrInvalid, format)
	}
	return nil
}

// writeStatus prints a pool's status in format: "json", the assign.Status
// as one JSON object, or "table": the settings and Redis's clock on a line, then
// a line per member with its count, weight, limit, leases in flight (and
// cap), state, streak, failures and, for a cooling or full member, when it
// comes back and how long that is from the clock's reading; then the
// leases open, if any.
func writeStatus(w io.Writer, st assign.Status, format string) error {
	if err := checkFormat(format); err != nil {
		return err
	}
	if format == "json" {
		return json.NewEncoder(w).Encode(st)
	}
	fmt.Fprintf(w, "pool %q at %s (Redis's clock): evict after %d failures in a row (0: never), last resort %s\n",
		st.Pool, st.Now.UTC().Format(time.RFC3339Nano), st.Settings.EvictAfter, st.Settings.LastResort)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tCOUNT\tWEIGHT\tLIMIT\tIN FLIGHT\tSTATE\tSTREAK\tFAILURES\tCOOLING UNTIL")
	for _, m := range st.Members {
		until, limit, inflight := "-", "-", strconv.FormatInt(m.InFlight, 10)
		if m.Concurrency > 0 {
			inflight += "/" + strconv.Itoa(m.Concurrency)
		}
		if !m.CoolingUntil.IsZero() {
			until = fmt.Sprintf("%s (in %v)", m.CoolingUntil.UTC().Format(time.RFC3339Nano), m.CoolingUntil.Sub(st.Now))
		}
		if m.Limit != nil {
			limit = fmt.Sprintf("%d/%v burst %d", m.Limit.Rate, m.Limit.Per, m.Limit.Burst)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%d\t%d\t%s\n", m.Name, m.Count, m.Weight, limit, inflight, memberState(m), m.Streak, m.Failures, until)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if st.OpenLeases == 0 {
		return nil
	}
	fmt.Fprintf(w, "%d leases open (pick --lease), the first to end first:\n", st.OpenLeases)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LEASE\tMEMBER\tDEADLINE")
	for _, l := range st.Leases {
		fmt.Fprintf(tw, "%s\t%s\t%s (in %v)\n", l.ID, l.Member, l.Deadline.UTC().Format(time.RFC3339Nano), l.Deadline.Sub(st.Now))
	}
	return tw.Flush()
}

// writeCooling prints when each member comes back (CooldownFor's answer),
// a line each.
func writeCooling(w io.Writer, pool string, members []string, until []time.Time) error {
	for i, m := range members {
		if i >= len(until) {
			break
		}
		if _, err := fmt.Fprintf(w, "%q in pool %q cools down until %s\n", m, pool, until[i].UTC().Format(time.RFC3339Nano)); err != nil {
			return err
		}
	}
	return nil
}

// writeInFlight prints a least-in-flight pool (Leases.List) in format:
// "json", one object with the pool, the leases open and each member's
// in-flight count, or "table": the leases open on a line, then a line per
// member.
func writeInFlight(w io.Writer, pool string, members []assign.Member, open int, format string) error {
	if err := checkFormat(format); err != nil {
		return err
	}
	type member struct {
		Name     string `json:"member"`
		InFlight int64  `json:"in_flight"`
		Active   bool   `json:"active"`
	}
	ms := make([]member, len(members))
	for i, m := range members {
		ms[i] = member{m.Name, m.Count, m.Active}
	}
	if format == "json" {
		return json.NewEncoder(w).Encode(struct {
			Pool    string   `json:"pool"`
			Open    int      `json:"open"`
			Members []member `json:"members"`
		}{pool, open, ms})
	}
	fmt.Fprintf(w, "pool %q: %d leases open (expired ones not yet reclaimed included)\n", pool, open)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tIN FLIGHT\tSTATE")
	for _, m := range ms {
		state := "active"
		if !m.Active {
			state = "removed"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", m.Name, m.InFlight, state)
	}
	return tw.Flush()
}
