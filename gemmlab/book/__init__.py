"""What the book shows beside the chapters' outputs: the course's figures and the pictures of chapters 8 and 9's
pipelines, the whole ladder at a glance from the bench's files, kernel listings rendered from the files, and the
explorer pages (the Shared Memory Workbench, the Bank Conflict Explorer, the Occupancy Calculator, the Pipeline
Explorer).
"""
