// Light and dark themes: the system's preference until the person picks one, which is then kept
// in this browser. The choice is an attribute on <html>; styles.css holds both palettes.
import { useCallback, useEffect, useState } from 'react';

export type Theme = 'light' | 'dark';
const STORAGE_KEY = 'dashboard.theme';

function storedTheme(): Theme | null {
  const value = window.localStorage.getItem(STORAGE_KEY);
  return value === 'light' || value === 'dark' ? value : null;
}

function systemTheme(): Theme {
  return window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

export function applyTheme(theme: Theme): void {
  document.documentElement.dataset.theme = theme;
}

/** Applies the stored or system theme before the first render, so nothing flashes. */
export function applyInitialTheme(): void {
  applyTheme(storedTheme() ?? systemTheme());
}

export function useTheme(): [Theme, () => void] {
  const [theme, setTheme] = useState<Theme>(() => storedTheme() ?? systemTheme());
  useEffect(() => applyTheme(theme), [theme]);
  const toggle = useCallback(() => {
    setTheme((current) => {
      const next = current === 'dark' ? 'light' : 'dark';
      // Only an explicit choice is stored: a visitor who never picks leaves nothing behind.
      window.localStorage.setItem(STORAGE_KEY, next);
      return next;
    });
  }, []);
  return [theme, toggle];
}
