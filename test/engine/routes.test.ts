import { describe, expect, it } from "vitest";
import { compileRoutes, type RouteSpec, routeSpecError } from "../../src/engine/routes";

const ROUTES: RouteSpec[] = [
  { method: "PUT", path: "/objects/:object", charges: { upload: 1 }, quota: "store" },
  { method: "DELETE", path: "/objects/:object", quota: "release" },
  { path: "/search", charges: { search: 5, request: 1 } },
  { method: "GET", path: "/tenants/:tenant/files/:file" },
  { path: "/static/*", charges: { static_bytes: 0 } },
  { path: "/" },
  { method: "post", path: "/*", charges: { write: 2 } },
];

describe("route spelling", () => {
  const matcher = compileRoutes([
    { path: "/buzz/:id" },
    { path: "/a/:p/b" },
  ]);

  it("folds every upper-case ASCII letter, Z and A included, when matching a literal segment", () => {
    for (const path of ["/BUZZ/1", "/Buzz/1", "/bUZz/1"]) expect(matcher.match("GET", path)?.index, path).toBe(0);
    expect(matcher.match("GET", "/A/x/B")?.index).toBe(1);
  });

  it("never matches an empty segment to a :param", () => {
    expect(matcher.match("GET", "/buzz//")).toBeNull();
    expect(matcher.match("GET", "/a//b")).toBeNull();
    expect(matcher.match("GET", "/a/x/b")?.params).toEqual({ p: "x" });
  });
});

describe("compileRoutes", () => {
  const matcher = compileRoutes(ROUTES);
  const match = (method: string, path: string) => {
    const m = matcher.match(method, path);
    return m && { index: m.index, charges: m.charges, quota: m.quota, params: { ...m.params } };
  };

  it.each([
    ["PUT", "/objects/cat.jpg", { index: 0, charges: [["upload", 1]], quota: "store", params: { object: "cat.jpg" } }],
    ["put", "/objects/cat.jpg", { index: 0, charges: [["upload", 1]], quota: "store", params: { object: "cat.jpg" } }],
    ["DELETE", "/objects/a%2Fb", { index: 1, charges: [], quota: "release", params: { object: "a%2Fb" } }],
    ["GET", "/search", { index: 2, charges: [["search", 5], ["request", 1]], quota: null, params: {} }],
    ["PATCH", "/search", { index: 2, charges: [["search", 5], ["request", 1]], quota: null, params: {} }],
    ["GET", "/tenants/acme/files/x", { index: 3, charges: [], quota: null, params: { tenant: "acme", file: "x" } }],
    ["GET", "/static", { index: 4, charges: [["static_bytes", 0]], quota: null, params: { "*": "" } }],
    ["GET", "/static/", { index: 4, charges: [["static_bytes", 0]], quota: null, params: { "*": "" } }],
    ["GET", "/static/css/site.css", { index: 4, charges: [["static_bytes", 0]], quota: null, params: { "*": "css/site.css" } }],
    ["GET", "/", { index: 5, charges: [], quota: null, params: {} }],
    ["POST", "/objects/cat.jpg", { index: 6, charges: [["write", 2]], quota: null, params: { "*": "objects/cat.jpg" } }],
    ["POST", "/", { index: 5, charges: [], quota: null, params: {} }],
    // Spelling cannot dodge a route: a trailing slash and ASCII case are ignored.
    ["GET", "/search/", { index: 2, charges: [["search", 5], ["request", 1]], quota: null, params: {} }],
    ["GET", "/SEARCH", { index: 2, charges: [["search", 5], ["request", 1]], quota: null, params: {} }],
    ["PUT", "/OBJECTS/Cat.jpg/", { index: 0, charges: [["upload", 1]], quota: "store", params: { object: "Cat.jpg" } }],
    ["GET", "/Tenants/acme/FILES/x", { index: 3, charges: [], quota: null, params: { tenant: "acme", file: "x" } }],
  ])("matches %s %s", (method, path, expected) => {
    expect(match(method, path)).toEqual(expected);
  });

  it.each([
    ["GET", "/objects/cat.jpg"],
    ["PUT", "/objects/"],
    ["PUT", "/objects"],
    ["PUT", "/objects/a/b"],
    ["GET", "/staticx"],
    ["GET", "/tenants/acme/files/"],
    ["GET", ""],
  ])("matches nothing for %s %j", (method, path) => {
    expect(matcher.match(method, path)).toBeNull();
  });

  it("compares literal segments exactly when the route says case_sensitive: true", () => {
    const m = compileRoutes([{ path: "/Admin/:page", case_sensitive: true }]);
    expect(m.match("GET", "/Admin/x")?.params).toEqual({ page: "x" });
    expect(m.match("GET", "/Admin/x/")?.params).toEqual({ page: "x" });
    expect(m.match("GET", "/admin/x")).toBeNull();
  });

  it("refuses a route with an unknown field, naming it and not its value", () => {
    expect(routeSpecError({ path: "/x", qouta: "store" })).toBe("qouta is not a known route field");
    expect(routeSpecError({ path: "/x", case_sensitive: "yes" })).toBe("case_sensitive must be true or false");
  });

  it("treats a colon inside a segment as literal", () => {
    const m = compileRoutes([{ method: "POST", path: "/v1/models/:model/x:run" }]);
    expect(m.match("POST", "/v1/models/m1/x:run")?.params).toEqual({ model: "m1" });
    expect(m.match("POST", "/v1/models/m1/x:walk")).toBeNull();
  });

  it("matches a HEAD to the routes a GET of the same path would match, and nothing else to a GET route", () => {
    const routes = compileRoutes([
      { method: "GET", path: "/expensive", charges: { reports: 5 } },
      { method: "POST", path: "/expensive", charges: { writes: 1 } },
      { method: "HEAD", path: "/probe", charges: { probes: 1 } },
    ]);
    expect(routes.match("HEAD", "/expensive")?.charges).toEqual([["reports", 5]]);
    expect(routes.match("head", "/Expensive/")?.index).toBe(0);
    expect(routes.match("OPTIONS", "/expensive")).toBeNull();
    expect(routes.match("POST", "/expensive")?.index).toBe(1);
    // A HEAD route is not a GET route.
    expect(routes.match("GET", "/probe")).toBeNull();
    expect(routes.match("HEAD", "/probe")?.index).toBe(2);
  });

  it("takes the first match in list order", () => {
    const m = compileRoutes([
      { path: "/a/:x", charges: { first: 1 } },
      { path: "/a/b", charges: { second: 1 } },
    ]);
    expect(m.match("GET", "/a/b")?.index).toBe(0);
  });

  it("gives each match its own params object", () => {
    const a = matcher.match("PUT", "/objects/a");
    const b = matcher.match("PUT", "/objects/b");
    expect([a?.params.object, b?.params.object]).toEqual(["a", "b"]);
  });

  it("throws on an invalid route", () => {
    expect(() => compileRoutes([{ path: "objects" }])).toThrow(/route 0: path must be a string beginning with \//);
  });
});

describe("routeSpecError", () => {
  it.each([
    [{ path: "/x" }],
    [{ method: "GET", path: "/a/:b/*", charges: { request: 0, upload_bytes: 100 } }],
    [{ method: "PUT", path: "/o/:object", quota: "store" }],
    [{ method: "POST", path: "/v1/models/m:generate" }],
  ])("accepts %j", (spec) => {
    expect(routeSpecError(spec)).toBeNull();
  });

  it.each([
    ["a string", "a route must be an object"],
    [{}, "path must be a string beginning with /"],
    [{ path: "x" }, "path must be a string beginning with /"],
    [{ path: "/a/*/b" }, "* may only be the last segment, on its own"],
    [{ path: "/a*" }, "* may only be the last segment, on its own"],
    [{ path: "/:" }, "parameter : must be named"],
    [{ path: "/:a/:a" }, "parameter :a appears twice"],
    [{ path: "/:__proto__" }, "parameter :__proto__ must be named"],
    [{ path: "/x", method: "GET /" }, "method must be an HTTP method name"],
    [{ path: "/x", charges: [] }, "charges must be an object"],
    [{ path: "/x", charges: { Upload: 1 } }, "must match ^[a-z][a-z0-9_]{0,31}$"],
    [{ path: "/x", charges: { upload: -1 } }, "charges.upload must be a whole number >= 0"],
    [{ path: "/x", charges: { upload: 1.5 } }, "charges.upload must be a whole number >= 0"],
    [{ path: "/x", charges: { upload: "1" } }, "charges.upload must be a whole number >= 0"],
    [{ path: "/x", charges: { upload: 1e9 } }, "charges.upload must be a whole number >= 0 and <= 10000"],
    [{ path: "/x", quota: "keep" }, 'quota must be "store" or "release"'],
    [{ path: "/x", quota: "store" }, "quota routes need an :object parameter"],
  ])("refuses %j", (spec, reason) => {
    expect(routeSpecError(spec)).toContain(reason);
  });
});
