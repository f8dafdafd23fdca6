package service

import (
	"errors"
	"fmt"
	"strings"
	"time"

	// The zone database goes into the binary, so time zones work on
	// machines and containers without /usr/share/zoneinfo.
	_ "time/tzdata"
)

// ErrUnknownTimezone means a time zone name is not in the IANA database.
var ErrUnknownTimezone = errors.New("unknown time zone")

// Now is the current time in one zone, as get_time answers it.
type Now struct {
	// Timezone is the IANA name asked for ("UTC" when none was).
	Timezone string `json:"timezone"`
	// Time is the local time in RFC 3339 (ISO 8601), with its offset.
	Time string `json:"time"`
	// Date is the local date, YYYY-MM-DD.
	Date string `json:"date"`
	// Weekday is the local day of the week, in English.
	Weekday string `json:"weekday"`
	// UTCOffset is the zone's offset from UTC now, such as +09:00.
	UTCOffset string `json:"utc_offset"`
}

// Clock tells the time in a zone.
type Clock struct {
	// Now returns the current instant; nil means time.Now.
	Now func() time.Time
}

// In returns the current time in the IANA zone named zone (Asia/Seoul,
// Europe/Berlin, UTC); an empty zone is UTC. "Local" is refused: it would
// be the server's zone, not one the user named. An unknown name is an
// error matching ErrUnknownTimezone.
func (c Clock) In(zone string) (Now, error) {
	zone = strings.TrimSpace(zone)
	if zone == "" {
		zone = "UTC"
	}
	if strings.EqualFold(zone, "local") {
		return Now{}, fmt.Errorf("%w %q: name a zone such as Asia/Seoul or Europe/Berlin", ErrUnknownTimezone, zone)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return Now{}, fmt.Errorf("%w %q: use an IANA name such as Asia/Seoul, America/New_York or UTC", ErrUnknownTimezone, zone)
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	t := now().In(loc)
	return Now{
		Timezone:  loc.String(),
		Time:      t.Format(time.RFC3339),
		Date:      t.Format(time.DateOnly),
		Weekday:   t.Weekday().String(),
		UTCOffset: t.Format("-07:00"),
	}, nil
}
