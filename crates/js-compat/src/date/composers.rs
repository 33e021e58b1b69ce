//! Collect a date's numbers as they come and decide what they mean at the end: which is the
//! year, month and day; the time fields; the zone offset.

/// "not set".
pub(super) const NONE: i64 = i64::MIN;

pub(super) fn between(x: i64, low: i64, high: i64) -> bool {
    (low..=high).contains(&x)
}

pub(super) fn is_month(x: i64) -> bool {
    between(x, 1, 12)
}

pub(super) fn is_day(x: i64) -> bool {
    between(x, 1, 31)
}

pub(super) fn is_hour(x: i64) -> bool {
    between(x, 0, 23)
}

pub(super) fn is_minute(x: i64) -> bool {
    between(x, 0, 59)
}

/// Up to three date numbers, and a month given by name.
#[derive(Default)]
pub(super) struct DayComposer {
    pub(super) comp: Vec<i64>,
    pub(super) named_month: Option<i64>,
    pub(super) is_iso_date: bool,
}

impl DayComposer {
    pub(super) fn add(&mut self, n: i64) -> bool {
        if self.comp.len() == 3 {
            return false;
        }
        self.comp.push(n);
        true
    }

    /// Year, month (1-based) and day.
    pub(super) fn write(&self) -> Option<(i64, i64, i64)> {
        if self.comp.is_empty() {
            return None;
        }
        // Missing numbers default to 1.
        let mut comp = self.comp.clone();
        comp.resize(3, 1);
        let (mut year, month, day) = match self.named_month {
            None if self.is_iso_date || !is_day(comp[0]) => (comp[0], comp[1], comp[2]),
            None => (comp[2], comp[0], comp[1]),
            Some(month) if !is_day(comp[0]) => (comp[0], month, comp[1]),
            Some(month) => (comp[1], month, comp[0]),
        };
        if !self.is_iso_date {
            // Two-digit years, as browsers read them.
            if between(year, 0, 49) {
                year += 2000;
            } else if between(year, 50, 99) {
                year += 1900;
            }
        }
        (is_month(month) && is_day(day)).then_some((year, month, day))
    }
}

/// Hour, minute, second, millisecond, and an AM/PM offset.
pub(super) struct TimeComposer {
    pub(super) comp: Vec<i64>,
    pub(super) hour_offset: Option<i64>,
}

impl TimeComposer {
    pub(super) fn new() -> Self {
        TimeComposer {
            comp: Vec::new(),
            hour_offset: None,
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.comp.is_empty()
    }

    /// Whether `n` can be the next field after at least an hour.
    pub(super) fn is_expecting(&self, n: i64) -> bool {
        match self.comp.len() {
            1 => is_minute(n),
            2 => is_minute(n),
            3 => between(n, 0, 999),
            _ => false,
        }
    }

    pub(super) fn add(&mut self, n: i64) -> bool {
        if self.comp.len() == 4 {
            return false;
        }
        self.comp.push(n);
        true
    }

    /// Adds `n` and closes the time: the fields after it are zero.
    pub(super) fn add_final(&mut self, n: i64) -> bool {
        if !self.add(n) {
            return false;
        }
        self.comp.resize(4, 0);
        true
    }

    pub(super) fn write(&self) -> Option<[i64; 4]> {
        let mut comp = self.comp.clone();
        comp.resize(4, 0);
        let [mut hour, minute, second, millisecond] = [comp[0], comp[1], comp[2], comp[3]];
        if let Some(offset) = self.hour_offset {
            if !between(hour, 0, 12) {
                return None;
            }
            hour = hour % 12 + offset;
        }
        let valid =
            is_hour(hour) && is_minute(minute) && is_minute(second) && between(millisecond, 0, 999);
        // 24:00:00.000 is the end of the day.
        let end_of_day = hour == 24 && minute == 0 && second == 0 && millisecond == 0;
        (valid || end_of_day).then_some([hour, minute, second, millisecond])
    }
}

/// The zone: a sign, hours and minutes.
pub(super) struct TimeZoneComposer {
    pub(super) sign: i64,
    pub(super) hour: i64,
    pub(super) minute: i64,
}

impl TimeZoneComposer {
    pub(super) fn new() -> Self {
        TimeZoneComposer {
            sign: NONE,
            hour: NONE,
            minute: NONE,
        }
    }

    pub(super) fn set(&mut self, offset_in_hours: i64) {
        self.sign = if offset_in_hours < 0 { -1 } else { 1 };
        self.hour = offset_in_hours.abs();
        self.minute = 0;
    }

    pub(super) fn set_sign(&mut self, sign: i64) {
        self.sign = if sign < 0 { -1 } else { 1 };
    }

    pub(super) fn is_expecting(&self, n: i64) -> bool {
        self.hour != NONE && self.minute == NONE && is_minute(n)
    }

    pub(super) fn is_utc(&self) -> bool {
        self.hour == 0 && self.minute == 0
    }

    pub(super) fn is_empty(&self) -> bool {
        self.hour == NONE
    }

    /// Seconds east of UTC; `Some(None)` for local time, `None` for an impossible offset.
    pub(super) fn write(&self) -> Option<Option<i64>> {
        if self.sign == NONE {
            return Some(None);
        }
        let hour = if self.hour == NONE { 0 } else { self.hour };
        let minute = if self.minute == NONE { 0 } else { self.minute };
        // V8 adds the parts as 32-bit unsigned numbers (wrapping) and refuses a total that does
        // not fit its small-integer type (31 bits plus sign on 64-bit Node).
        let total = (hour as u32)
            .wrapping_mul(3600)
            .wrapping_add((minute as u32).wrapping_mul(60));
        if total > i32::MAX as u32 {
            return None;
        }
        let total = i64::from(total);
        Some(Some(self.sign * total))
    }
}
