"""What the tests share: scripted judge and batch servers, battery writers, grading helpers."""
