package service_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftlabs/weft/examples/guide/service"
)

func TestClock(t *testing.T) {
	at := time.Date(2026, 3, 1, 23, 30, 0, 0, time.UTC) // a Sunday in UTC
	c := service.Clock{Now: func() time.Time { return at }}
	tests := []struct {
		zone string
		want service.Now
	}{
		{"", service.Now{Timezone: "UTC", Time: "2026-03-01T23:30:00Z", Date: "2026-03-01", Weekday: "Sunday", UTCOffset: "+00:00"}},
		{"Asia/Seoul", service.Now{Timezone: "Asia/Seoul", Time: "2026-03-02T08:30:00+09:00", Date: "2026-03-02", Weekday: "Monday", UTCOffset: "+09:00"}},
		{" America/New_York ", service.Now{Timezone: "America/New_York", Time: "2026-03-01T18:30:00-05:00", Date: "2026-03-01", Weekday: "Sunday", UTCOffset: "-05:00"}},
	}
	for _, tt := range tests {
		got, err := c.In(tt.zone)
		if err != nil {
			t.Errorf("In(%q): %v", tt.zone, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("In(%q) (-want +got):\n%s", tt.zone, diff)
		}
	}
	for _, zone := range []string{"Mars/Olympus", "Local", "local", "../../etc/passwd"} {
		if _, err := c.In(zone); !errors.Is(err, service.ErrUnknownTimezone) {
			t.Errorf("In(%q) error = %v, want ErrUnknownTimezone", zone, err)
		}
	}
}
