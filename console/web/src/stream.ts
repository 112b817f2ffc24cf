/** Opens one of the console's event streams (a run's, or the runs list's): the one place the page does. */
export const openStream = (url: string): EventSource => new EventSource(url);
