"""What the recorder keeps and decides, without rclpy: rings, the live recording, the judge and
the verdict, the offline check of a bag; bags in bag/, the report in report/."""
