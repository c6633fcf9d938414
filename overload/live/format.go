package live

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteReport writes a live comparison: the calibration of each
// protection and, when every check passed, the table and the conclusion;
// otherwise, plainly, that the machine was too busy, what went wrong and
// what to do — not numbers that mean nothing.
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
		times := "measured once"
		if n := len(m.Attempts); n != 1 {
			times = fmt.Sprintf("measured %d times", n)
		}
		fmt.Fprintf(w, "  %-34s capacity %.0f requests a second, unloaded p50 %v, p99 %v, server's share of its core %s; %s, %s\n",
			ModeName(m.Mode)+":", c.Capacity, c.NoLoadP50.Round(10*time.Microsecond), c.NoLoadP99.Round(10*time.Microsecond), share, times, verdict)
	}
	fmt.Fprintln(w)
	if !rep.Reliable {
		fmt.Fprintln(w, Refusal(rep))
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
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f %%\t%v\t%v\t%s\t%d\t%d\t%s\t%s\n", ModeName(m.Mode), p.Name, p.Sent, 100*p.Goodput,
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

// Refusal is what a report that is not Reliable says instead of figures,
// in plain English: that the machine was too busy, what went wrong — each
// failed check of the last attempt of each protection that failed, named
// by the protection's name — and what to do.
func Refusal(rep Report) string {
	var b strings.Builder
	if rep.StoppedEarly {
		b.WriteString("TOO BUSY: this machine was too busy to measure the server, so the comparison stopped at the first\n" +
			"measurement that failed and shows no figures. What went wrong:\n")
	} else {
		b.WriteString("TOO BUSY: this machine was too busy for the figures to mean anything (another program took the\n" +
			"server's core or the load generator's), so none are shown. What went wrong:\n")
	}
	for _, m := range rep.Modes {
		if m.Reliable || len(m.Attempts) == 0 {
			continue
		}
		for _, c := range m.Attempts[len(m.Attempts)-1].Checks {
			if !c.OK {
				fmt.Fprintf(&b, "  %s: %s\n", ModeName(m.Mode), c.Explain())
			}
		}
	}
	b.WriteString("What to do: wait until nothing else runs on this machine — builds, tests, other programs —\n" +
		"and run the comparison again.")
	return b.String()
}

// WriteSoakSample prints one sample of a soak as a line: its time, the
// server's heap and goroutines, and the requests answered and refused.
func WriteSoakSample(w io.Writer, s SoakSample) error {
	_, err := fmt.Fprintf(w, "%8.1f s  heap %7.2f MB  %5d goroutines  %8d answered  %8d refused\n",
		s.At.Seconds(), float64(s.HeapInuse)/1e6, s.Goroutines, s.Good, s.Rejected)
	return err
}
