// regenerate-unicode-properties ships no types: its index is a Map from each property to its values.
declare module 'regenerate-unicode-properties' {
  const properties: Map<string, string[]>;
  export default properties;
}
