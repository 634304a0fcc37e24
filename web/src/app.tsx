/**
 * Routes: every page is a URL (bookmarkable, back/forward work) and its view state (filters, cursor,
 * Live) lives in the query string. Pages load lazily so the first page ships only what it needs.
 */
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { lazy, Suspense } from "react";
import { Route, Switch, useLocation } from "wouter";
import { ApiError } from "./api/client";
import { RequireSession } from "./api/session";
import { ErrorBoundary } from "./ui/error-boundary";
import { Loading } from "./ui/loading";
import { Shell } from "./ui/shell";

const Login = lazy(() => import("./pages/login"));
const Fleet = lazy(() => import("./pages/fleet"));
const Pending = lazy(() => import("./pages/pending"));
const AgentDetail = lazy(() => import("./pages/agent"));
const Audit = lazy(() => import("./pages/audit"));
const Inbox = lazy(() => import("./pages/inbox"));
const Operators = lazy(() => import("./pages/operators"));
const Account = lazy(() => import("./pages/account"));
const IdentityProviders = lazy(() => import("./pages/identity-providers"));
const IdentityProvider = lazy(() => import("./pages/identity-provider"));
const Modules = lazy(() => import("./pages/modules"));
const ModuleDetail = lazy(() => import("./pages/module"));
const ModuleUpload = lazy(() => import("./pages/module-upload"));
const Assignments = lazy(() => import("./pages/assignments"));
const AssignmentEdit = lazy(() => import("./pages/assignment-edit"));
const AssignmentDetail = lazy(() => import("./pages/assignment"));
const Sources = lazy(() => import("./pages/sources"));
const SourceDetail = lazy(() => import("./pages/source"));
const RunDetail = lazy(() => import("./pages/run"));
const OperationDetail = lazy(() => import("./pages/operation"));
const Secrets = lazy(() => import("./pages/secrets"));
const Values = lazy(() => import("./pages/values"));
const ValueSet = lazy(() => import("./pages/value-set"));
const Channels = lazy(() => import("./pages/channels"));
const ChannelDetail = lazy(() => import("./pages/channel"));
const Maintenance = lazy(() => import("./pages/maintenance"));
const TerminalPage = lazy(() => import("./pages/terminal"));
const Sessions = lazy(() => import("./pages/sessions"));
const Recording = lazy(() => import("./pages/recording"));
const Requests = lazy(() => import("./pages/requests"));
const RequestDetail = lazy(() => import("./pages/request"));
const ApprovalPolicies = lazy(() => import("./pages/approval-policies"));
const ApprovalPolicy = lazy(() => import("./pages/approval-policy"));
const NotFound = lazy(() => import("./pages/not-found"));

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // A 4xx will not change by asking again; a 5xx or an unreachable gateway might.
      retry: (failures, error) => !(error instanceof ApiError && error.status < 500) && failures < 1000,
      retryDelay: (n) => Math.min(1000 * 2 ** n, 10_000),
      refetchOnWindowFocus: true,
    },
    mutations: { retry: false },
  },
});

export function App() {
  const [location] = useLocation();
  return (
    <QueryClientProvider client={queryClient}>
      <Suspense fallback={<Loading />}>
        <Switch>
          <Route path="/login" component={Login} />
          <Route>
            <RequireSession>
              <Shell>
                <ErrorBoundary resetKey={location}>
                  <Suspense fallback={<Loading />}>
                    <Switch>
                      <Route path="/" component={Fleet} />
                      <Route path="/agents" component={Fleet} />
                      <Route path="/agents/pending" component={Pending} />
                      <Route path="/agents/:nodeId/terminal" component={TerminalPage} />
                      <Route path="/agents/:nodeId" component={AgentDetail} />
                      <Route path="/modules" component={Modules} />
                      <Route path="/modules/new" component={ModuleUpload} />
                      <Route path="/modules/:name/upload" component={ModuleUpload} />
                      <Route path="/modules/:name" component={ModuleDetail} />
                      <Route path="/assignments" component={Assignments} />
                      <Route path="/assignments/new" component={AssignmentEdit} />
                      <Route path="/assignments/:name/edit" component={AssignmentEdit} />
                      <Route path="/assignments/:name/runs/:runId" component={RunDetail} />
                      <Route path="/assignments/:name" component={AssignmentDetail} />
                      <Route path="/requests" component={Requests} />
                      <Route path="/requests/:id" component={RequestDetail} />
                      <Route path="/approval-policies" component={ApprovalPolicies} />
                      <Route path="/approval-policies/:name" component={ApprovalPolicy} />
                      <Route path="/sources" component={Sources} />
                      <Route path="/sources/:name" component={SourceDetail} />
                      <Route path="/operations/:operationId" component={OperationDetail} />
                      <Route path="/secrets" component={Secrets} />
                      <Route path="/values" component={Values} />
                      <Route path="/values/:name" component={ValueSet} />
                      <Route path="/channels" component={Channels} />
                      <Route path="/channels/:id" component={ChannelDetail} />
                      <Route path="/maintenance" component={Maintenance} />
                      <Route path="/terminal/:sessionId" component={TerminalPage} />
                      <Route path="/sessions" component={Sessions} />
                      <Route path="/sessions/:sessionId" component={Recording} />
                      <Route path="/audit" component={Audit} />
                      <Route path="/inbox" component={Inbox} />
                      <Route path="/operators" component={Operators} />
                      <Route path="/identity-providers" component={IdentityProviders} />
                      <Route path="/identity-providers/:name" component={IdentityProvider} />
                      <Route path="/account" component={Account} />
                      <Route component={NotFound} />
                    </Switch>
                  </Suspense>
                </ErrorBoundary>
              </Shell>
            </RequireSession>
          </Route>
        </Switch>
      </Suspense>
    </QueryClientProvider>
  );
}
