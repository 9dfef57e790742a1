// docs/design.md step 4: the first matching entry of `routes` (compiled once with
// the config) gives the request's charges and its quota action. Matching is
// on the collapsed path, ignoring a trailing slash and (unless the route says
// otherwise) case, so a route cannot be dodged by spelling.
import type { Exchange } from "../exchange";
import type { RouteMatcher } from "../engine/routes";

/**
 * Needs the compiled routes; returns a step that sets x.route (it never refuses).
 * @example matchRoute(config.routes)(x); x.route?.quota // "store"
 */
export function matchRoute(routes: RouteMatcher): (x: Exchange) => null {
  return function matchRouteStep(x) {
    x.route = routes.match(x.method, x.routePath);
    return null;
  };
}
