"""In-memory task lists for the CLI todo app."""


class Task:
    def __init__(self, title, done=False):
        self.title = title
        self.done = done

    def __repr__(self):
        return f"Task({self.title!r}, done={self.done})"


class TaskList:
    def __init__(self, name, tasks=[]):
        self.name = name
        self.tasks = tasks

    def add(self, title):
        task = Task(title)
        self.tasks.append(task)
        return task

    def complete(self, title):
        for task in self.tasks:
            if task.title == title:
                task.done = True
                return task
        raise KeyError(f"no task named {title!r} in {self.name}")

    def pending(self):
        return [t.title for t in self.tasks if not t.done]

    def progress(self):
        if not self.tasks:
            return 0.0
        return sum(t.done for t in self.tasks) / len(self.tasks)
