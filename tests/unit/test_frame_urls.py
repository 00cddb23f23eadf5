"""Source strings from the YAML config become the right device, and bad ones say what is wrong."""

import pytest

from gamerig.hardware.frames import SourceUrlError, device_from_url
from gamerig.hardware.frames.opencv_sources import NetworkStream, Pace, V4L2Camera, VideoFile
from gamerig.hardware.frames.x11_source import X11Screen


@pytest.mark.parametrize(
    ("url", "device"),
    [
        ("v4l2:///dev/video0", V4L2Camera("/dev/video0")),
        (
            "v4l2:///dev/video2?width=640&height=480&fps=30&fourcc=YUYV",
            V4L2Camera("/dev/video2", width=640, height=480, fps=30.0, fourcc="YUYV"),
        ),
        ("file:///srv/clips/game%20one.mp4", VideoFile("/srv/clips/game one.mp4", Pace.NATIVE, loop=False)),
        ("file:///tmp/a.avi?pace=fast&loop=1", VideoFile("/tmp/a.avi", Pace.FAST, loop=True)),
        ("file:///tmp/a.avi?loop=0&pace=native", VideoFile("/tmp/a.avi", Pace.NATIVE, loop=False)),
        # Network URLs reach FFmpeg untouched: their query belongs to the server.
        ("http://10.0.0.5:8081/stream.mjpg?user=a", NetworkStream("http://10.0.0.5:8081/stream.mjpg?user=a")),
        ("rtsp://cam.local/live", NetworkStream("rtsp://cam.local/live")),
        ("x11://:0", X11Screen(":0", None)),
        ("x11://:1/10,20,300,600", X11Screen(":1", (10, 20, 300, 600))),
        ("x11://remote:0.0/0,0,640,480?fps=60", X11Screen("remote:0.0", (0, 0, 640, 480), fps=60.0)),
        ("x11:///5,5,100,100", X11Screen(None, (5, 5, 100, 100))),
        ("  V4L2:///dev/video0 ", V4L2Camera("/dev/video0")),
    ],
)
def test_source_strings_parse_to_devices(url: str, device: object) -> None:
    assert device_from_url(url) == device


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("/dev/video0", "no scheme"),
        ("webcam://0", "unknown scheme 'webcam'"),
        ("v4l2://", "missing path"),
        ("file:///", "missing path"),
        ("v4l2://dev/video0", "three slashes: v4l2:///dev/video0"),
        ("file://clip.mp4", "three slashes"),
        ("http:///stream.mjpg", "http URL has no host"),
        ("x11://:0/1,2,3", "bad region '1,2,3': expected x,y,width,height"),
        ("x11://:0/a,b,c,d", "must be integers"),
        ("x11://:0/0,0,0,480", "width and height > 0"),
        ("x11://:0/-1,0,10,10", "x and y must be >= 0"),
        ("v4l2:///dev/video0?width=wide", "option width='wide': must be a positive integer"),
        ("v4l2:///dev/video0?height=0", "option height='0': must be a positive integer"),
        ("v4l2:///dev/video0?fps=inf", "option fps='inf': must be a positive number"),
        ("v4l2:///dev/video0?fourcc=MJPEG", "four ASCII characters"),
        ("v4l2:///dev/video0?size=640x480", "unknown option size for v4l2 (known: width, height, fps, fourcc)"),
        ("v4l2:///dev/video0?fps=30&fps=60", "option 'fps' given twice"),
        ("file:///a.mp4?pace=slow", "option pace='slow': must be one of native, fast"),
        ("file:///a.mp4?loop=yes", "option loop='yes': must be 0 or 1"),
        ("x11://:0?width=3", "unknown option width for x11 (known: fps)"),
    ],
)
def test_bad_source_strings_name_the_problem(url: str, problem: str) -> None:
    with pytest.raises(SourceUrlError) as raised:
        device_from_url(url)
    assert problem in str(raised.value)
    assert repr(url) in str(raised.value)
    assert isinstance(raised.value, ValueError)
