"""The GIF writer: frames written as they come, read back by Pillow as they were (GL-free)."""

from __future__ import annotations

import numpy as np
import pytest

from ecs_nav.render.gif import GifWriter, changed_pixels, frame_indices

PIL = pytest.importorskip("PIL")
from PIL import Image  # noqa: E402


def moving_square(n: int, size=(64, 40)) -> list[np.ndarray]:
    """``n`` frames of a flat background with a square moving right (a handful of colours)."""
    width, height = size
    frames = []
    for i in range(n):
        frame = np.zeros((height, width, 3), dtype=np.uint8)
        frame[:] = (12, 34, 56)
        frame[5:15, 2 + 3 * i:12 + 3 * i] = (200, 40 + 10 * i, 0)
        frame[-3:, :4] = (255, 255, 255)
        frames.append(frame)
    return frames


def read_back(path) -> tuple[list[np.ndarray], list[int]]:
    """Every frame as Pillow composes it (RGB) and its duration in ms."""
    frames, durations = [], []
    with Image.open(path) as image:
        for k in range(image.n_frames):
            image.seek(k)
            frames.append(np.asarray(image.convert("RGB")))
            durations.append(image.info["duration"])
    return frames, durations


def test_frames_of_few_colours_read_back_exactly(tmp_path):
    frames = moving_square(7)
    with GifWriter(tmp_path / "a.gif", fps=30) as gif:
        for frame in frames:
            gif.append(frame)
    back, _ = read_back(tmp_path / "a.gif")
    assert len(back) == 7
    for written, read in zip(frames, back, strict=True):
        np.testing.assert_array_equal(read, written)


@pytest.mark.parametrize("fps", [30, 24, 7.5])
def test_frame_i_starts_at_round_100_i_over_fps_centiseconds(tmp_path, fps):
    frames = moving_square(9)
    with GifWriter(tmp_path / "a.gif", fps=fps) as gif:
        for frame in frames:
            gif.append(frame)
    _, durations = read_back(tmp_path / "a.gif")
    starts = np.concatenate([[0], np.cumsum(durations)])
    np.testing.assert_array_equal(starts, [10 * round(100 * i / fps) for i in range(10)])


def test_an_identical_frame_lengthens_the_one_before_instead_of_being_written(tmp_path):
    frames = moving_square(4)
    frames.insert(2, frames[1].copy())
    frames.insert(2, frames[1].copy())
    with GifWriter(tmp_path / "a.gif", fps=25) as gif:
        for frame in frames:
            gif.append(frame)
        assert gif.frames == 6
    back, durations = read_back(tmp_path / "a.gif")
    assert len(back) == 4 and durations == [40, 120, 40, 40]
    np.testing.assert_array_equal(back[1], frames[1])
    np.testing.assert_array_equal(back[2], frames[4])


def test_frames_are_on_disk_before_the_gif_is_closed(tmp_path):
    """Encoded as they go: each distinct frame reaches the file when the next one comes (it
    waits only for its delay), so memory holds one frame whatever the length of the run."""
    path = tmp_path / "a.gif"
    gif = GifWriter(path, fps=30)
    sizes = []
    for frame in moving_square(6):
        gif.append(frame)
        sizes.append(path.stat().st_size)
    assert all(b > a for a, b in zip(sizes[1:], sizes[2:]))  # every frame after the first grew it
    gif.close()
    assert len(read_back(path)[0]) == 6


def test_a_frame_of_many_colours_is_quantized_closely(tmp_path):
    """A smooth gradient of 256 x 64 colours (more than a GIF table holds) comes back within a
    few levels a channel: no worse than a uniform 6x7x6 cube (252 colours: +-21 a channel)."""
    x, y = np.meshgrid(np.arange(256), np.arange(64))
    frame = np.stack([x, y * 4, 255 - x], axis=2).astype(np.uint8)
    palette, indices = frame_indices(frame)
    assert len(palette) <= 255 and indices.max() < len(palette)
    error = np.abs(palette[indices].astype(int) - frame)
    cube = np.array([6, 7, 6])
    uniform = np.round(np.round(frame / 255 * (cube - 1)) / (cube - 1) * 255)
    assert error.mean() <= np.abs(uniform - frame).mean()
    with GifWriter(tmp_path / "g.gif") as gif:
        gif.append(frame)
    (back,), _ = read_back(tmp_path / "g.gif")
    np.testing.assert_array_equal(back, palette[indices])


def test_frame_indices_are_exact_up_to_255_colours():
    rng = np.random.default_rng(4)
    colours = rng.integers(0, 256, (255, 3), dtype=np.uint8)
    frame = colours[rng.integers(0, 255, (30, 50))]
    palette, indices = frame_indices(frame)
    np.testing.assert_array_equal(palette[indices], frame)


def test_changed_pixels_matches_any_channel_differing():
    rng = np.random.default_rng(5)
    a = rng.integers(0, 4, (20, 30, 3), dtype=np.uint8)
    b = rng.integers(0, 4, (20, 30, 3), dtype=np.uint8)
    np.testing.assert_array_equal(changed_pixels(a, b), np.any(a != b, axis=2))


def test_bad_frames_are_refused_with_their_shape(tmp_path):
    with GifWriter(tmp_path / "a.gif") as gif:
        with pytest.raises(ValueError, match=r"uint8 array, got float64 \(4, 4, 3\)"):
            gif.append(np.zeros((4, 4, 3)))
        gif.append(np.zeros((4, 6, 3), dtype=np.uint8))
        with pytest.raises(ValueError, match="frame 1 is 5x4, the first was 6x4"):
            gif.append(np.zeros((4, 5, 3), dtype=np.uint8))
    with pytest.raises(ValueError, match="fps must be > 0"):
        GifWriter(tmp_path / "b.gif", fps=0)


def test_recording_progress_reaches_its_last_frame_only_once_the_file_is_closed(tmp_path, monkeypatch, capsys):
    """The bar's "N/N" comes after the encoder's tail (the GIF's last frame and trailer), not
    before it: no silent wait after "eta 0.0s"."""
    pytest.importorskip("imageio")
    from ecs_nav.core.world import World
    from ecs_nav.render import capture, gif

    frames = iter(moving_square(11))
    monkeypatch.setattr(capture, "render_frame", lambda *args, **kwargs: next(frames))
    events = []
    close = gif.GifWriter.close

    def closing(self):
        events.append(f"closed after: {capsys.readouterr().err.strip().splitlines()[-1]}")
        close(self)

    monkeypatch.setattr(gif.GifWriter, "close", closing)
    world = World()
    capture.record(world, 20, tmp_path / "run.gif", size=(64, 40), fps=30, progress=True)
    assert world.tick == 20
    assert "10/11 frames" in events[0]
    assert "11/11 frames" in capsys.readouterr().err
    assert len(read_back(tmp_path / "run.gif")[0]) == 11
