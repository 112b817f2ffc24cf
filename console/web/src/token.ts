/** Where the page keeps the console's access token: per tab and per origin (so per port). */
const TOKEN_KEY = "prp-console-token";

/**
 * The token from `?token=` in the address the console printed, taken once: kept in this tab's
 * sessionStorage and removed from the address bar (and so from history and bookmarks). Never a
 * cookie: a browser sends a host's cookies to every port of it, other servers' included.
 */
function takeToken(): string | null {
  const url = new URL(location.href);
  const fromUrl = url.searchParams.get("token");
  if (fromUrl !== null) {
    sessionStorage.setItem(TOKEN_KEY, fromUrl);
    url.searchParams.delete("token");
    // The full URL, never a path: a path like //host would be read as another site.
    history.replaceState(history.state, "", url.href);
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

const token = takeToken();

if (token === null) {
  // Without it every API call is refused: say what to do rather than wait for data that never comes.
  const notice = document.createElement("p");
  notice.setAttribute("role", "alert");
  notice.className = "refusal";
  notice.dataset.testid = "token-missing";
  notice.textContent =
    "This tab has no access token: open the URL that the console printed, or wrote to its --console-url-file (it ends in ?token=…).";
  document.body.prepend(notice);
}

/** The header every API request and event stream carries. */
export const authHeaders = (): Record<string, string> => (token === null ? {} : { authorization: `Bearer ${token}` });
