declare namespace App {
  interface Locals {
    /** On-demand route handlers, wired by the composition root (api/server.ts). */
    routes: import('../api/app.ts').Routes;
    /** Data for server-rendered pages. */
    views: import('../api/app.ts').Views;
  }
}
