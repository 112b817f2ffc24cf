import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { RunPage } from "./run-page.js";
import { RunsList } from "./runs-list.js";
import "./style.css";

/** `#/` is the runs list, `#/run/ID` a run's page. */
const route = (): { runId: string | null } => {
  const m = /^#\/run\/(.+)$/.exec(location.hash);
  return { runId: m ? decodeURIComponent(m[1]!) : null };
};

function App() {
  const [{ runId }, setRoute] = useState(route());
  useEffect(() => {
    const onHash = () => setRoute(route());
    window.addEventListener("hashchange", onHash);
    // The address may have changed between the first render and this listener.
    onHash();
    return () => window.removeEventListener("hashchange", onHash);
  }, []);
  return (
    <>
      <header>
        <nav aria-label="Console">
          <a href="#/">PRP console</a>
          {runId !== null && <span aria-current="page"> / {runId}</span>}
        </nav>
      </header>
      <main>{runId === null ? <RunsList /> : <RunPage key={runId} runId={runId} />}</main>
    </>
  );
}

render(<App />, document.getElementById("app")!);
