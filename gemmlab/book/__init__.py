"""What the book shows beside the chapters' outputs: the course's figures, kernel listings rendered from the files,
and the explorer pages (the Shared Memory Workbench, the Bank Conflict Explorer, the Occupancy Calculator, the Pipeline Explorer).
"""
