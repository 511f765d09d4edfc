import unittest

from tasks import Task, TaskList


class TestTasks(unittest.TestCase):
    def test_lists_are_independent(self):
        work = TaskList("work")
        home = TaskList("home")
        work.add("report")
        self.assertEqual(home.pending(), [])
        self.assertEqual(work.pending(), ["report"])

    def test_given_tasks_are_used(self):
        initial = [Task("a"), Task("b", done=True)]
        tl = TaskList("x", initial)
        self.assertEqual(tl.pending(), ["a"])
        self.assertAlmostEqual(tl.progress(), 0.5)

    def test_complete(self):
        tl = TaskList("y")
        tl.add("z")
        tl.complete("z")
        self.assertEqual(tl.progress(), 1.0)
        with self.assertRaises(KeyError):
            tl.complete("missing")


if __name__ == "__main__":
    unittest.main()
