"""What the book shows beside the chapters' outputs: the course's figures and the pictures of chapters 8 and 9's
pipelines, kernel listings rendered from the files, and the explorer pages (the Shared Memory Workbench, the Bank
Conflict Explorer, the Occupancy Calculator, the Pipeline Explorer).
"""
