// Vite's client types: lets `import './styles.css'` type-check.
/// <reference types="vite/client" />
