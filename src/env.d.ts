declare namespace App {
  interface Locals {
    /** Data for server-rendered pages. */
    views: import('../api/engine.ts').Views;
    /** The running server's SITE_URL and CANON_URL. */
    links: import('../api/documents/links.ts').Links;
  }
}
