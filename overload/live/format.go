package live

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// WriteReport writes a live comparison as a table.
func WriteReport(w io.Writer, rep Report) error {
	fmt.Fprintf(w, "server: %d core, %v of CPU a request; capacity %.0f req/s; no-load p50 %v, p99 %v; clients give up after %v\n\n",
		rep.Cores, rep.Work, rep.Capacity, rep.NoLoadP50.Round(10*time.Microsecond), rep.NoLoadP99.Round(10*time.Microsecond), rep.Deadline)
	tw := tabwriter.NewWriter(w, 4, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "protection\tphase\tsent\tgoodput\tp50 admitted\tp99 admitted\tp99 / no-load p99\trefused\ttimed out\trecovery")
	for _, m := range rep.Modes {
		for _, p := range m.Phases {
			rec := ""
			if d, ok := m.Recovery[p.Name]; ok {
				rec = "never"
				if d >= 0 {
					rec = d.String()
				}
			}
			ratio := "—"
			if p.P99 > 0 && rep.NoLoadP99 > 0 {
				ratio = fmt.Sprintf("%.2f×", float64(p.P99)/float64(rep.NoLoadP99))
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f %%\t%v\t%v\t%s\t%d\t%d\t%s\n", m.Mode, p.Name, p.Sent, 100*p.Goodput,
				p.P50.Round(10*time.Microsecond), p.P99.Round(10*time.Microsecond), ratio, p.Rejected, p.Timeouts, rec)
		}
	}
	return tw.Flush()
}
