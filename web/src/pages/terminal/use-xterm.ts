/**
 * An xterm.js terminal in a container: fitted to the container (ResizeObserver, so a window resize
 * or a layout change resizes the PTY through `onResize`), themed from the console's light/dark
 * variables, with copy on selection (and Ctrl+Shift+C) and paste by Ctrl+Shift+V or a right-click.
 */
import { FitAddon } from "@xterm/addon-fit";
import { type ITheme, Terminal } from "@xterm/xterm";
import "@xterm/xterm/css/xterm.css";
import { type RefObject, useEffect, useState } from "react";

function themeFromCss(): ITheme {
  const css = getComputedStyle(document.documentElement);
  const v = (name: string, fallback: string) => css.getPropertyValue(name).trim() || fallback;
  return {
    background: v("--bg", "#ffffff"),
    foreground: v("--text", "#1f2328"),
    cursor: v("--text", "#1f2328"),
    cursorAccent: v("--bg", "#ffffff"),
    selectionBackground: v("--info-bg", "#ddf4ff"),
    selectionForeground: v("--info-text", "#0a3f8a"),
  };
}

/** Clipboard calls fail without permission or focus; copying and pasting then just do nothing. */
function copy(text: string): void {
  if (text) navigator.clipboard?.writeText(text).catch(() => {});
}

export function useXterm(container: RefObject<HTMLDivElement | null>): Terminal | undefined {
  const [term, setTerm] = useState<Terminal>();

  useEffect(() => {
    const el = container.current;
    if (!el) return;
    const t = new Terminal({
      cursorBlink: true,
      fontFamily: getComputedStyle(document.documentElement).getPropertyValue("--mono").trim() || "monospace",
      fontSize: 14,
      scrollback: 5000,
      theme: themeFromCss(),
    });
    const fit = new FitAddon();
    t.loadAddon(fit);
    t.open(el);
    const refit = () => {
      // A hidden or zero-sized container proposes no size; keep the last one.
      if (fit.proposeDimensions()) fit.fit();
    };
    refit();

    let frame = 0;
    const observer = new ResizeObserver(() => {
      cancelAnimationFrame(frame);
      frame = requestAnimationFrame(refit);
    });
    observer.observe(el);

    const scheme = window.matchMedia("(prefers-color-scheme: dark)");
    const retheme = () => {
      t.options.theme = themeFromCss();
    };
    scheme.addEventListener("change", retheme);

    const selection = t.onSelectionChange(() => copy(t.getSelection()));
    t.attachCustomKeyEventHandler((e) => {
      if (e.type !== "keydown" || !e.ctrlKey || !e.shiftKey) return true;
      if (e.code === "KeyC") {
        copy(t.getSelection());
        return false;
      }
      // Not handled here: the browser's paste event reaches xterm's textarea and becomes input.
      return e.code !== "KeyV";
    });
    const onContextMenu = (e: MouseEvent) => {
      if (!navigator.clipboard?.readText) return;
      e.preventDefault();
      navigator.clipboard
        .readText()
        .then((text) => text && t.paste(text))
        .catch(() => {});
    };
    el.addEventListener("contextmenu", onContextMenu);

    setTerm(t);
    return () => {
      setTerm(undefined);
      cancelAnimationFrame(frame);
      observer.disconnect();
      scheme.removeEventListener("change", retheme);
      el.removeEventListener("contextmenu", onContextMenu);
      selection.dispose();
      t.dispose();
    };
  }, [container]);

  return term;
}
