/**
 * Which rows of a long list are in the page: rows of one fixed height, one of them (the opened
 * one) taller by a fixed amount, so that every row's place is arithmetic and a list of a million
 * rows costs the same as one of a hundred. Written here rather than taken from a library: none
 * is in node_modules (the console adds no dependency for one page), and the fixed heights make
 * the whole of it these few lines.
 */
export interface WindowShape {
  /** Rows in the list. */
  count: number;
  /** Every row's height, in px. */
  rowHeight: number;
  /** The index of the opened row (-1: none) and how much taller it is. */
  openIndex: number;
  openExtra: number;
  /** Rows kept in the page beyond each edge of the view, so that a small scroll shows no gap. */
  overscan: number;
}

/** The list's full height. */
export const listHeight = (s: WindowShape): number => s.count * s.rowHeight + (s.openIndex >= 0 ? s.openExtra : 0);

/** Where row `index` starts. */
export const rowTop = (s: WindowShape, index: number): number =>
  index * s.rowHeight + (s.openIndex >= 0 && index > s.openIndex ? s.openExtra : 0);

/** The row at `y` px from the top. */
function rowAt(s: WindowShape, y: number): number {
  const openEnd = rowTop(s, s.openIndex) + s.rowHeight + s.openExtra;
  const index =
    s.openIndex >= 0 && y >= openEnd ? Math.floor((y - s.openExtra) / s.rowHeight) : Math.floor(y / s.rowHeight);
  return Math.min(Math.max(0, s.count - 1), Math.max(0, index));
}

/** The rows to put in the page for a view from `scrollTop`, `height` px tall: [first, end). */
export function visibleRows(s: WindowShape, scrollTop: number, height: number): { first: number; end: number } {
  if (s.count === 0) return { first: 0, end: 0 };
  const first = Math.max(0, rowAt(s, scrollTop) - s.overscan);
  const end = Math.min(s.count, rowAt(s, scrollTop + height) + 1 + s.overscan);
  return { first, end };
}
