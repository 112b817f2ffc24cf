/**
 * The date-time format every PRP validator asserts: UTC, seconds, optional milliseconds,
 * `YYYY-MM-DDTHH:MM:SS(.mmm)?Z` (wire.md §3). Ranges are checked field by field so that a
 * month 13 or an hour 24 is refused; day-of-month is not checked against the calendar.
 */
export const DATE_TIME_SOURCE =
  "^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\\.[0-9]{3})?Z$";

export const DATE_TIME = new RegExp(DATE_TIME_SOURCE);
