package ops

import (
	"fmt"

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

// MaxEventLogMB is the largest --event-log-max-mb: eventlog.MaxRotateBytes
// in MiB.
const MaxEventLogMB = eventlog.MaxRotateBytes >> 20

// CheckRotation refuses a rotation of a process's event log out of range,
// naming the flags: --event-log-max-mb 0 (never rotate) or 1 to
// MaxEventLogMB, and with a size, --event-log-keep 1 to
// eventlog.MaxRotateKeep (without one, keep is not used).
func CheckRotation(maxMB, keep int) error {
	switch {
	case maxMB < 0 || maxMB > MaxEventLogMB:
		return fmt.Errorf("--event-log-max-mb %d: want 0 (never rotate) or 1 to %d MiB", maxMB, MaxEventLogMB)
	case maxMB > 0 && (keep < 1 || keep > eventlog.MaxRotateKeep):
		return fmt.Errorf("--event-log-keep %d: want 1 to %d rotated files", keep, eventlog.MaxRotateKeep)
	}
	return nil
}

// Rotation is the option of eventlog.OpenFile for a checked rotation
// (CheckRotation), or none for size 0.
func Rotation(maxMB, keep int) []eventlog.FileOption {
	if maxMB == 0 {
		return nil
	}
	return []eventlog.FileOption{eventlog.Rotated(int64(maxMB)<<20, keep)}
}
