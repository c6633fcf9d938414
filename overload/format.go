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

// WriteRun writes a run's per-second series and its summary: a table with
// a summary line at the end, CSV (the summary is left to the caller, so
// the file stays one table), or JSON lines ending with {"summary": …}.
func WriteRun(w io.Writer, r Result, format string) error {
	bw := bufio.NewWriter(w)
	switch format {
	case FormatTable:
		tw := tabwriter.NewWriter(bw, 4, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "t\tarrivals\tresponses\ttimeouts\twasted\trejected\tconcurrency\tqueued\tlimit\tworst\t")
		for _, s := range r.Series {
			fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.0f\t%.2f\t\n", s.T, s.Arrivals, s.Responses, s.Timeouts,
				s.Wasted, s.Rejected, s.Concurrency, s.Queued, s.Limit, s.Worst)
		}
		tw.Flush()
		fmt.Fprintln(bw, SummaryLine(r.Summary))
	case FormatCSV:
		cw := csv.NewWriter(bw)
		cw.Write([]string{"t", "arrivals", "responses", "timeouts", "wasted", "rejected", "concurrency", "queued", "limit", "worst_response"})
		for _, s := range r.Series {
			cw.Write([]string{strconv.Itoa(s.T), strconv.Itoa(s.Arrivals), strconv.Itoa(s.Responses), strconv.Itoa(s.Timeouts),
				strconv.Itoa(s.Wasted), strconv.Itoa(s.Rejected), strconv.Itoa(s.Concurrency), strconv.Itoa(s.Queued),
				strconv.FormatFloat(s.Limit, 'f', -1, 64), strconv.FormatFloat(s.Worst, 'f', -1, 64)})
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
		return fmt.Errorf("%w: format %q: want table, csv or jsonl", ErrConfig, format)
	}
	return bw.Flush()
}

// SummaryLine is a run's summary in one line.
func SummaryLine(s Summary) string {
	recovery, lowest := "", ""
	if s.Peak {
		recovery = "; recovery after the largest peak: never"
		if s.RecoverySeconds >= 0 {
			recovery = fmt.Sprintf("; recovery after the largest peak: %.0f s", s.RecoverySeconds)
		}
		lowest = fmt.Sprintf(", worst useful minute %.0f %% of capacity", 100*s.LowestUsefulMinute)
	}
	return fmt.Sprintf("summary %s: goodput %.1f %% (%d of %d answered in time, %d refused, %d timed out, %d wasted); "+
		"worst response %.2f× nominal, p99 %.2f×; peak concurrency %d at %d s%s%s",
		s.Run, 100*s.Goodput, s.Useful, s.Arrivals, s.Rejected, s.Timeouts, s.Wasted,
		s.WorstResponse, s.P99Response, s.PeakConcurrency, s.PeakAt, recovery, lowest)
}

// WriteComparison writes the summaries of several runs as a table.
func WriteComparison(w io.Writer, runs []Result) error {
	tw := tabwriter.NewWriter(w, 4, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tgoodput\trefused\ttimed out\twasted\tworst\tp99\tpeak concurrency\tworst useful minute\trecovery")
	for _, r := range runs {
		s := r.Summary
		rec, lowest := "—", "—"
		if s.Peak {
			rec = "never"
			if s.RecoverySeconds >= 0 {
				rec = fmt.Sprintf("%.0f s", s.RecoverySeconds)
			}
			lowest = fmt.Sprintf("%.0f %%", 100*s.LowestUsefulMinute)
		}
		fmt.Fprintf(tw, "%s\t%.1f %%\t%d\t%d\t%d\t%.2f×\t%.2f×\t%d\t%s\t%s\n", s.Run, 100*s.Goodput, s.Rejected,
			s.Timeouts, s.Wasted, s.WorstResponse, s.P99Response, s.PeakConcurrency, lowest, rec)
	}
	return tw.Flush()
}
