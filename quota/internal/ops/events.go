package ops

import (
	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/eventlog"
)

// WriteStarts writes a start event for each tenant a process serves: the
// checker learns R, B, the regions, E and the mode from it.
func WriteStarts(l *eventlog.File, at int64, tenants []quota.Tenant) {
	for _, e := range eventlog.StartEvents(at, tenants) {
		l.Write(&e)
	}
}
