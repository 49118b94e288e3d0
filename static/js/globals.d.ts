// Globals of the page, for `tsc --checkJs` only (nothing here is served): Plotly.js is a
// classic script from the plotly package, loaded before the modules.
interface Window {
  Plotly: any;
}
