/**
 * The date-time format every PRP validator asserts: UTC, seconds, optional milliseconds,
 * `YYYY-MM-DDTHH:MM:SS(.mmm)?Z` (wire.md §3). Fields are range-checked, and days against their
 * month (30-day months, February up to 29), so 2026-02-30 and 2026-04-31 are refused. It is a
 * regular expression so that the standalone validators embed it with no import; the one date it
 * cannot tell from a real one is February 29 of a common year.
 */
const DAY_OF_MONTH =
  "((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-9]))";
export const DATE_TIME_SOURCE = `^[0-9]{4}-${DAY_OF_MONTH}T([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\\.[0-9]{3})?Z$`;

export const DATE_TIME = new RegExp(DATE_TIME_SOURCE);
