import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { NewRunForm } from "./new-run-form.js";
import { parseRoute, type Route } from "./route.js";
import { RunPage } from "./run-page.js";
import { RunsList } from "./runs-list.js";
import { useWaitingCount } from "./waiting-count.js";
import { WorkersPage } from "./workers-page.js";
import "./style.css";

function Page({ route }: { route: Route }) {
  switch (route.page) {
    case "runs":
      return <RunsList />;
    case "new":
      return <NewRunForm />;
    case "workers":
      return <WorkersPage />;
    case "run":
      return <RunPage key={route.runId} runId={route.runId} tab={route.tab} eventSeq={route.eventSeq} />;
  }
}

function App() {
  const [route, setRoute] = useState(parseRoute(location.hash));
  useWaitingCount();
  useEffect(() => {
    const onHash = () => setRoute(parseRoute(location.hash));
    window.addEventListener("hashchange", onHash);
    // The address may have changed between the first render and this listener.
    onHash();
    return () => window.removeEventListener("hashchange", onHash);
  }, []);
  const current = (page: Route["page"]) => (route.page === page ? "page" : undefined);
  return (
    <>
      <header>
        <nav aria-label="Console">
          <a href="#/" class="brand" aria-current={current("runs")}>
            PRP console
          </a>
          <a href="#/new" aria-current={current("new")}>
            New run
          </a>
          <a href="#/workers" aria-current={current("workers")}>
            Queue and workers
          </a>
        </nav>
      </header>
      <main>
        <Page route={route} />
      </main>
    </>
  );
}

render(<App />, document.getElementById("app")!);
