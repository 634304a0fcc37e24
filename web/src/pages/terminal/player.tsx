/**
 * asciinema-player over a transcript already fetched through the console session (the player never
 * fetches by itself: connect-src is 'self' and the cookie stays with the API client). Speed changes
 * rebuild the player at the same position; seeking is the player's progress bar, its keys, and the
 * buttons here.
 */
import * as AsciinemaPlayer from "asciinema-player";
import "asciinema-player/dist/bundle/asciinema-player.css";
import { useEffect, useRef, useState } from "react";

export const SPEEDS = [0.5, 1, 2, 4, 8] as const;
const SEEK_STEP_S = 5;

export function RecordingPlayer({ text, speed }: { text: string; speed: number }) {
  const el = useRef<HTMLDivElement>(null);
  const [player, setPlayer] = useState<AsciinemaPlayer.Player>();
  const position = useRef(0);

  useEffect(() => {
    const container = el.current;
    if (!container) return;
    const p = AsciinemaPlayer.create({ data: text }, container, {
      autoPlay: true,
      speed,
      startAt: position.current,
      // Long pauses (someone reading) are shortened to 2 s so the replay stays watchable.
      idleTimeLimit: 2,
      fit: "width",
      terminalFontFamily: getComputedStyle(document.documentElement).getPropertyValue("--mono").trim() || undefined,
    });
    setPlayer(p);
    return () => {
      position.current = p.getCurrentTime() ?? 0;
      setPlayer(undefined);
      p.dispose();
    };
  }, [text, speed]);

  const seekBy = (delta: number) => {
    if (!player) return;
    const duration = player.getDuration() ?? 0;
    void player.seek(Math.min(Math.max(0, player.getCurrentTime() + delta), duration));
  };

  return (
    <>
      <div className="player-frame" data-testid="player" ref={el} />
      <div className="toolbar">
        <button type="button" className="btn btn-small" disabled={!player} onClick={() => void player?.seek(0)}>
          Restart
        </button>
        <button type="button" className="btn btn-small" disabled={!player} onClick={() => seekBy(-SEEK_STEP_S)}>
          Back {SEEK_STEP_S} s
        </button>
        <button type="button" className="btn btn-small" disabled={!player} onClick={() => seekBy(SEEK_STEP_S)}>
          Forward {SEEK_STEP_S} s
        </button>
        <button type="button" className="btn btn-small" disabled={!player} onClick={() => void player?.play()}>
          Play
        </button>
        <button type="button" className="btn btn-small" disabled={!player} onClick={() => void player?.pause()}>
          Pause
        </button>
      </div>
    </>
  );
}
