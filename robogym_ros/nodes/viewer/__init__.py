"""``robogym_viewer``: a web page showing a running sim's cameras live, its run state, and the
sim's own pause/resume/step/reset buttons (node: the ROS node and its command line; the page
and the HTTP server are robogym_ros.live.viewer_page and viewer_server). docs/agents.md.
"""
