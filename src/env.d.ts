declare namespace App {
  interface Locals {
    /** Data for server-rendered pages. */
    views: import('../api/app.ts').Views;
  }
}
