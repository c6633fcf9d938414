package overload

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// Formats of a run's series.
const (
	FormatTable = "table"
	FormatCSV   = "csv"
	FormatJSONL = "jsonl"
)

// CheckFormat refuses a format WriteRun does not write, so that a caller
// can refuse it before a run.
func CheckFormat(format string) error {
	if format != FormatTable && format != FormatCSV && format != FormatJSONL {
		return fmt.Errorf("%w: format %q: want table, csv or jsonl", ErrConfig, format)
	}
	return nil
}

// WriteRun writes a run's per-second series and its summary: a table with
// a summary line at the end, CSV (the summary is left to the caller, so
// the file stays one table), or JSON lines ending with {"summary": …}.
func WriteRun(w io.Writer, r Result, format string) error {
	bw := bufio.NewWriter(w)
	db := r.Profile.Other != nil
	switch format {
	case FormatTable:
		tw := tabwriter.NewWriter(bw, 4, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "t\tarrivals\tretries\tresponses\tlate\ttimeouts\trejected\twork\twasted\tconcurrency\tqueued\tlimit\tworst\t")
		if db {
			fmt.Fprint(tw, "refused\tother\tother ok\tother errors\t")
		}
		fmt.Fprintln(tw)
		for _, s := range r.Series {
			fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\t%.1f\t%d\t%d\t%.0f\t%.2f\t", s.T, s.Arrivals, s.Retries, s.Responses,
				s.Late, s.Timeouts, s.Rejected, s.Work, s.Wasted, s.Concurrency, s.Queued, s.Limit, s.Worst)
			if db {
				fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t", s.Refused, s.OtherArrivals, s.OtherResponses, s.OtherErrors)
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
		fmt.Fprintln(bw, SummaryLine(r.Summary))
	case FormatCSV:
		cw := csv.NewWriter(bw)
		head := []string{"t", "arrivals", "retries", "responses", "late", "timeouts", "rejected", "work", "wasted", "concurrency", "queued", "limit", "worst_response"}
		if db {
			head = append(head, "refused", "other_arrivals", "other_responses", "other_errors")
		}
		cw.Write(head)
		ftoa := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
		for _, s := range r.Series {
			row := []string{strconv.Itoa(s.T), strconv.Itoa(s.Arrivals), strconv.Itoa(s.Retries), strconv.Itoa(s.Responses),
				strconv.Itoa(s.Late), strconv.Itoa(s.Timeouts), strconv.Itoa(s.Rejected), ftoa(s.Work), ftoa(s.Wasted),
				strconv.Itoa(s.Concurrency), strconv.Itoa(s.Queued), ftoa(s.Limit), ftoa(s.Worst)}
			if db {
				row = append(row, strconv.Itoa(s.Refused), strconv.Itoa(s.OtherArrivals), strconv.Itoa(s.OtherResponses), strconv.Itoa(s.OtherErrors))
			}
			cw.Write(row)
		}
		cw.Flush()
		if err := cw.Error(); err != nil {
			return err
		}
	case FormatJSONL:
		enc := json.NewEncoder(bw)
		for i := range r.Series {
			enc.Encode(&r.Series[i])
		}
		enc.Encode(map[string]Summary{"summary": r.Summary})
	default:
		return CheckFormat(format)
	}
	return bw.Flush()
}

// SummaryLine is a run's summary in one line.
func SummaryLine(s Summary) string {
	peak, db := "", ""
	if s.Peak {
		peak = "; recovery after the largest peak: never"
		if s.RecoverySeconds >= 0 {
			peak = fmt.Sprintf("; recovery after the largest peak: %.0f s", s.RecoverySeconds)
		}
		peak += fmt.Sprintf(", worst useful minute %.0f %% of capacity; after the peak %.0f %% of the demand answered in time, %.0f %% of the work wasted",
			100*s.LowestUsefulMinute, 100*s.UsefulAfterPeak, 100*s.WastedAfterPeak)
	}
	if s.OtherRequests > 0 {
		db = fmt.Sprintf("; %d refused for want of a connection; the other service: %d requests, %.1f %% errors", s.Refused, s.OtherRequests, 100*s.OtherErrorRate)
	}
	return fmt.Sprintf("summary %s: goodput %.1f %% (%d of %d clients answered in time; %d tries, %d of them retries; %d refused, %d given up, %d answered late); "+
		"wasted work %.0f requests' worth (%.1f %%); worst response %.2f× nominal, p99 %.2f×; peak concurrency %d at %d s (load at %d s)%s%s",
		s.Run, 100*s.Goodput, s.Useful, s.Clients, s.Arrivals, s.Retries, s.Rejected, s.Timeouts, s.Late,
		s.WastedWork, 100*s.WastedShare, s.WorstResponse, s.P99Response, s.PeakConcurrency, s.PeakAt, s.LoadPeakAt, peak, db)
}

// WriteComparison writes the summaries of several runs as a table.
func WriteComparison(w io.Writer, runs []Result) error {
	tw := tabwriter.NewWriter(w, 4, 4, 2, ' ', 0)
	db := len(runs) > 0 && runs[0].Profile.Other != nil
	if db {
		fmt.Fprintln(tw, "run\tgoodput\trefused\ttimed out\tretries\twasted work\tworst\tp99\tpeak concurrency\tno connection\tother service's errors\tin its worst second")
	} else {
		fmt.Fprintln(tw, "run\tgoodput\trefused\ttimed out\tretries\twasted work\tworst\tp99\tpeak concurrency\tworst useful minute\tuseful after the peak\twasted after the peak\trecovery")
	}
	for _, r := range runs {
		s := r.Summary
		fmt.Fprintf(tw, "%s\t%.1f %%\t%d\t%d\t%d\t%.1f %%\t%.2f×\t%.2f×\t%d", s.Run, 100*s.Goodput, s.Rejected,
			s.Timeouts, s.Retries, 100*s.WastedShare, s.WorstResponse, s.P99Response, s.PeakConcurrency)
		switch {
		case db:
			fmt.Fprintf(tw, "\t%d\t%.1f %%\t%.0f %%\n", s.Refused, 100*s.OtherErrorRate, 100*s.OtherWorstSecond)
		case s.Peak:
			rec := "never"
			if s.RecoverySeconds >= 0 {
				rec = fmt.Sprintf("%.0f s", s.RecoverySeconds)
			}
			fmt.Fprintf(tw, "\t%.0f %%\t%.0f %%\t%.0f %%\t%s\n", 100*s.LowestUsefulMinute, 100*s.UsefulAfterPeak, 100*s.WastedAfterPeak, rec)
		default:
			fmt.Fprint(tw, "\t—\t—\t—\t—\n")
		}
	}
	return tw.Flush()
}

// WriteGame writes a game as the article draws it: a row per request, a
// column per period, each cell the work left at the period's end ("done"
// in the period its work finishes, "wait" while it queues, "away" when it
// is turned away), then the concurrency of each period.
func WriteGame(w io.Writer, g Game) error {
	bw := bufio.NewWriter(w)
	tw := tabwriter.NewWriter(bw, 4, 4, 1, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "request\t")
	for _, p := range g.Periods {
		fmt.Fprintf(tw, "%d\t", p.Period)
	}
	fmt.Fprintln(tw, "took\t")
	for i, r := range g.Requests {
		fmt.Fprintf(tw, "%d\t", i+1)
		for p := 1; p <= len(g.Periods); p++ {
			k := p - r.Arrived
			switch {
			case k < 0 || k >= len(r.Cells):
				fmt.Fprint(tw, "\t")
			case r.Cells[k].State == "done":
				fmt.Fprint(tw, "done\t")
			case r.Cells[k].State == "queued":
				fmt.Fprint(tw, "wait\t")
			case r.Cells[k].State == "away":
				fmt.Fprint(tw, "away\t")
			default:
				fmt.Fprintf(tw, "%.2f\t", r.Cells[k].Left)
			}
		}
		if r.Took > 0 {
			fmt.Fprintf(tw, "%d\t\n", r.Took)
		} else {
			fmt.Fprint(tw, "—\t\n")
		}
	}
	for _, row := range []struct {
		name string
		v    func(GamePeriod) int
	}{
		{"in work", func(p GamePeriod) int { return p.Inside }},
		{"waiting", func(p GamePeriod) int { return p.Waiting }},
		{"in system", func(p GamePeriod) int { return p.InSystem }},
	} {
		fmt.Fprintf(tw, "%s\t", row.name)
		for _, p := range g.Periods {
			fmt.Fprintf(tw, "%d\t", row.v(p))
		}
		fmt.Fprintln(tw, "\t")
	}
	tw.Flush()
	return bw.Flush()
}

// WriteProfiles lists the profiles, a name and its description a line, as
// the help of the overload lab does.
func WriteProfiles(w io.Writer) error {
	for _, p := range Profiles() {
		if _, err := fmt.Fprintf(w, "  %-11s %s\n", p.Name, p.Description); err != nil {
			return err
		}
	}
	return nil
}
