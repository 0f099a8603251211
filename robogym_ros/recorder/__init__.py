"""What the recorder keeps and decides, without rclpy: rings, the recording, the verdict, bags."""
