package live

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// WriteReport writes a live comparison: the calibration of each
// protection and, when every check passed, the table and the conclusion;
// otherwise, plainly, that the machine was too busy and which checks
// failed — not numbers that mean nothing.
func WriteReport(w io.Writer, rep Report) error {
	fmt.Fprintf(w, "server: %d core, %v of CPU a request; clients give up after %v\n", rep.Cores, rep.Work, rep.Deadline)
	for _, m := range rep.Modes {
		c := m.Calibration
		share := "not measured"
		if c.CPUShare >= 0 {
			share = fmt.Sprintf("%.0f %%", 100*c.CPUShare)
		}
		verdict := "checks passed"
		if !m.Reliable {
			verdict = "checks FAILED"
		}
		fmt.Fprintf(w, "  %-16s capacity %.0f req/s, no-load p50 %v, p99 %v, server's share of its core %s; %d attempt(s), %s\n",
			m.Mode, c.Capacity, c.NoLoadP50.Round(10*time.Microsecond), c.NoLoadP99.Round(10*time.Microsecond), share, len(m.Attempts), verdict)
	}
	fmt.Fprintln(w)
	if !rep.Reliable {
		fmt.Fprintln(w, "UNRELIABLE: the machine was too busy to give a meaningful answer (another process took the server's core,")
		fmt.Fprintln(w, "or the load generator's); no figures are shown. Run it again on an idle machine. Failed checks:")
		for _, p := range rep.Problems() {
			fmt.Fprintln(w, "  "+p)
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 4, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "protection\tphase\tsent\tgoodput\tp50 admitted\tp99 admitted\tp99 / no-load p99\trefused\ttimed out\tserver's core\trecovery")
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
			if p.P99 > 0 && m.Calibration.NoLoadP99 > 0 {
				ratio = fmt.Sprintf("%.2f×", float64(p.P99)/float64(m.Calibration.NoLoadP99))
			}
			core := "—"
			if p.CPUShare >= 0 {
				core = fmt.Sprintf("%.0f %%", 100*p.CPUShare)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f %%\t%v\t%v\t%s\t%d\t%d\t%s\t%s\n", m.Mode, p.Name, p.Sent, 100*p.Goodput,
				p.P50.Round(10*time.Microsecond), p.P99.Round(10*time.Microsecond), ratio, p.Rejected, p.Timeouts, core, rec)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rep.Conclusion != nil {
		fmt.Fprintf(w, "\nconclusion: %s\n", rep.Conclusion)
	}
	return nil
}

// WriteSoakSample prints one sample of a soak as a line: its time, the
// server's heap and goroutines, and the requests answered and refused.
func WriteSoakSample(w io.Writer, s SoakSample) error {
	_, err := fmt.Fprintf(w, "%8.1f s  heap %7.2f MB  %5d goroutines  %8d answered  %8d refused\n",
		s.At.Seconds(), float64(s.HeapInuse)/1e6, s.Goroutines, s.Good, s.Rejected)
	return err
}
